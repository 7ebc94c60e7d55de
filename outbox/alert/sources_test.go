package alert_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/alert"
)

// countsStore answers FeedbackCounts with fixed counts.
type countsStore struct {
	outbox.AlertStore
	c outbox.FeedbackCounts
}

func (s countsStore) FeedbackCounts(context.Context, time.Time) (outbox.FeedbackCounts, error) {
	return s.c, nil
}

func conditionsOf(t *testing.T, src outbox.AlertSource, now time.Time) []outbox.AlertCondition {
	t.Helper()
	cs, err := src.Conditions(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestFeedbackRateNeedsEnoughReportsAboveTheRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    outbox.FeedbackCounts
		want bool
	}{
		{"too few reports", outbox.FeedbackCounts{Delivered: 10, Bounced: 5, Submissions: 5}, false},
		{"at the rate", outbox.FeedbackCounts{Delivered: 95, Bounced: 5, Submissions: 5}, false},
		{"above the rate", outbox.FeedbackCounts{Delivered: 94, Bounced: 4, Complained: 2, Submissions: 6}, true},
	} {
		cs := conditionsOf(t, alert.FeedbackRate(countsStore{c: tc.c}, 0, 0, 0), t0)
		if (len(cs) == 1) != tc.want {
			t.Errorf("%s: conditions %+v, want alert %v", tc.name, cs, tc.want)
			continue
		}
		if tc.want && (cs[0].Affected != 6 || !strings.Contains(cs[0].Summary, "6.0% of the e-mail reports of the last 24h")) {
			t.Errorf("%s: condition %+v", tc.name, cs[0])
		}
	}
}

func TestSpoolSourcesReportOnlyPastTheirThresholds(t *testing.T) {
	var (
		entries       int
		oldest, since time.Time
	)
	state := func() (int, time.Time, time.Time, bool) { return entries, oldest, since, true }
	down := alert.StoreUnreachable(state, "host", time.Minute)
	backlog := alert.SpoolBacklog(state, "host", 10*time.Minute)
	if len(conditionsOf(t, down, t0))+len(conditionsOf(t, backlog, t0)) != 0 {
		t.Fatal("an empty spool raised an alert")
	}
	entries, oldest, since = 3, t0.Add(-5*time.Minute), t0.Add(-2*time.Minute)
	if cs := conditionsOf(t, down, t0); len(cs) != 1 || !cs[0].Local || cs[0].Key != "host" || cs[0].Affected != 3 {
		t.Errorf("store failing for 2m, threshold 1m: %+v", cs)
	}
	if cs := conditionsOf(t, backlog, t0); len(cs) != 0 {
		t.Errorf("oldest entry 5m old, threshold 10m: %+v", cs)
	}
	if cs := conditionsOf(t, backlog, t0.Add(5*time.Minute)); len(cs) != 1 || cs[0].Affected != 3 {
		t.Errorf("oldest entry 10m old: %+v", cs)
	}
	// The replayer stores again: the outage is still reported for two passes that got
	// their notices written, so that an evaluator reaching the database again records it;
	// a pass whose writes failed (the database flapping) does not count; then it is gone.
	since, entries = time.Time{}, 0
	observer := down.(alert.PassObserver)
	for i, recorded := range []bool{false, true, false, true} {
		cs := conditionsOf(t, down, t0.Add(time.Duration(i+1)*time.Minute))
		if len(cs) != 1 || cs[0].Affected != 3 || !strings.Contains(cs[0].Summary, "did not take spooled posts for 3m0s") ||
			!strings.Contains(cs[0].Summary, "it takes them again") {
			t.Errorf("poll %d after the outage: %+v", i+1, cs)
		}
		observer.PassDone(recorded)
	}
	if cs := conditionsOf(t, down, t0.Add(5*time.Minute)); len(cs) != 0 {
		t.Errorf("third poll after the outage: %+v", cs)
	}
}
