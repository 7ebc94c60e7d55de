package alert

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Defaults of the feedback_rate source.
const (
	// DefaultFeedbackRate is the percentage of bounces and complaints among the reports
	// received above which the sending reputation is at risk (SES reviews an account
	// whose bounce rate passes 5%).
	DefaultFeedbackRate   = 5.0
	DefaultFeedbackWindow = 24 * time.Hour
	// DefaultFeedbackMin is the fewest reports in the window for a rate to mean anything.
	DefaultFeedbackMin = 20
)

// FeedbackRate is the feedback_rate source: among the post-send reports received in the
// last window (outbox/feedback: delivered, bounced, complained), the bounces and
// complaints are above percent, with at least minimum reports. It needs the provider's
// delivery reports as well as its bounces (docs/operations.md, "Alerts"). Zero values
// take the defaults above.
func FeedbackRate(store outbox.AlertStore, percent float64, window time.Duration, minimum int) outbox.AlertSource {
	if percent <= 0 {
		percent = DefaultFeedbackRate
	}
	if window <= 0 {
		window = DefaultFeedbackWindow
	}
	if minimum <= 0 {
		minimum = DefaultFeedbackMin
	}
	return outbox.AlertSourceFunc{SourceName: outbox.AlertFeedbackRate, Func: func(ctx context.Context, now time.Time) ([]outbox.AlertCondition, error) {
		c, err := store.FeedbackCounts(ctx, now.Add(-window))
		if err != nil {
			return nil, err
		}
		bad := c.Bounced + c.Complained
		total := c.Delivered + bad
		if total < minimum || float64(bad)*100 <= percent*float64(total) {
			return nil, nil
		}
		return []outbox.AlertCondition{{Kind: outbox.AlertFeedbackRate, Key: "email", Affected: c.Submissions,
			Summary: fmt.Sprintf("%.1f%% of the e-mail reports of the last %s are bounces or complaints (%d bounced, %d complained, of %d; the threshold is %g%%)",
				float64(bad)*100/float64(total), short(window), c.Bounced, c.Complained, total, percent)}}, nil
	}}
}

// short prints a window as an operator wrote it: 24h, not 24h0m0s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
