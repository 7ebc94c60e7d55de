package alert

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// SpoolState is what this instance's spool says (outbox/spool.Fallback): how many
// posts wait, since when the oldest, and since when replaying them into the store
// fails. ok is false while there is no spool.
type SpoolState func() (entries int, oldest, failingSince time.Time, ok bool)

// Defaults of the spool sources' thresholds.
const (
	DefaultStoreUnreachable = 5 * time.Minute
	DefaultSpoolBacklog     = 15 * time.Minute
)

// StoreUnreachable is the store_unreachable source: posts are being spooled because
// replaying them into the store has failed for at least after. It is this instance's
// view (Local, keyed by instance). While the database cannot be reached at all, no alert
// can be written: so an outage that lasted past after is still reported for
// afterOutagePolls polls once the database takes the spool again, and the evaluator,
// which reaches the database then, records it (opened, then resolved: "it was down for
// 12m, 30 posts spooled").
func StoreUnreachable(state SpoolState, instance string, after time.Duration) outbox.AlertSource {
	if after <= 0 {
		after = DefaultStoreUnreachable
	}
	var (
		mu      sync.Mutex
		outage  outbox.AlertCondition // the last outage past after; Kind "" when none
		ended   time.Time
		replays int // polls left to report outage after it ended
	)
	return outbox.AlertSourceFunc{SourceName: outbox.AlertStoreUnreachable, Func: func(_ context.Context, now time.Time) ([]outbox.AlertCondition, error) {
		mu.Lock()
		defer mu.Unlock()
		entries, _, since, ok := state()
		if ok && !since.IsZero() && entries > 0 && now.Sub(since) >= after {
			outage = outbox.AlertCondition{Kind: outbox.AlertStoreUnreachable, Key: instance, Local: true, Since: since,
				Affected: entries,
				Summary: fmt.Sprintf("the database has not taken spooled posts for %s on instance %s; %d posts wait in the spool",
					now.Sub(since).Round(time.Second), instance, entries)}
			ended, replays = time.Time{}, afterOutagePolls
			return []outbox.AlertCondition{outage}, nil
		}
		if outage.Kind == "" {
			return nil, nil
		}
		if ended.IsZero() {
			ended = now
		}
		if replays == 0 {
			outage = outbox.AlertCondition{}
			return nil, nil
		}
		replays--
		c := outage
		c.Summary = fmt.Sprintf("the database did not take spooled posts for %s on instance %s (from %s); it takes them again",
			ended.Sub(c.Since).Round(time.Second), instance, c.Since.UTC().Format(time.RFC3339))
		return []outbox.AlertCondition{c}, nil
	}}
}

// afterOutagePolls is how many polls a store_unreachable outage is still reported after
// it ended: enough for an evaluator that reaches the database again to record it.
const afterOutagePolls = 2

// SpoolBacklog is the spool_backlog source: the spool still holds a post older than
// after, whatever the reason (the database refuses it, the replayer is stuck).
func SpoolBacklog(state SpoolState, instance string, after time.Duration) outbox.AlertSource {
	if after <= 0 {
		after = DefaultSpoolBacklog
	}
	return outbox.AlertSourceFunc{SourceName: outbox.AlertSpoolBacklog, Func: func(_ context.Context, now time.Time) ([]outbox.AlertCondition, error) {
		entries, oldest, _, ok := state()
		if !ok || entries == 0 || oldest.IsZero() || now.Sub(oldest) < after {
			return nil, nil
		}
		return []outbox.AlertCondition{{Kind: outbox.AlertSpoolBacklog, Key: instance, Local: true, Since: oldest,
			Affected: entries,
			Summary:  fmt.Sprintf("%d posts wait in the spool of instance %s, the oldest for %s", entries, instance, now.Sub(oldest).Round(time.Second))}}, nil
	}}
}
