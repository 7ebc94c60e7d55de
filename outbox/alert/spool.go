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
// can be written: so an outage that lasted past after is still reported once the
// database takes the spool again, until afterOutagePolls evaluator passes have written
// what they had to (PassDone): opened, then resolved, "it was down for 12m, 30 posts
// spooled". A pass whose writes failed (the database flapping back) does not count, or
// the outage could end untold.
func StoreUnreachable(state SpoolState, instance string, after time.Duration) outbox.AlertSource {
	if after <= 0 {
		after = DefaultStoreUnreachable
	}
	return &storeUnreachable{state: state, instance: instance, after: after}
}

type storeUnreachable struct {
	state    SpoolState
	instance string
	after    time.Duration

	mu       sync.Mutex
	outage   outbox.AlertCondition // the last outage past after; Kind "" when none
	ended    time.Time
	replays  int  // recorded passes left that report the outage after it ended
	reported bool // the last poll reported the ended outage
}

func (s *storeUnreachable) Name() string { return outbox.AlertStoreUnreachable }

func (s *storeUnreachable) Conditions(_ context.Context, now time.Time) ([]outbox.AlertCondition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reported = false
	entries, _, since, ok := s.state()
	if ok && !since.IsZero() && entries > 0 && now.Sub(since) >= s.after {
		s.outage = outbox.AlertCondition{Kind: outbox.AlertStoreUnreachable, Key: s.instance, Local: true, Since: since,
			Affected: entries,
			Summary: fmt.Sprintf("the database has not taken spooled posts for %s on instance %s; %d posts wait in the spool",
				now.Sub(since).Round(time.Second), s.instance, entries)}
		s.ended, s.replays = time.Time{}, afterOutagePolls
		return []outbox.AlertCondition{s.outage}, nil
	}
	if s.outage.Kind == "" {
		return nil, nil
	}
	if s.ended.IsZero() {
		s.ended = now
	}
	s.reported = true
	c := s.outage
	c.Summary = fmt.Sprintf("the database did not take spooled posts for %s on instance %s (from %s); it takes them again",
		s.ended.Sub(c.Since).Round(time.Second), s.instance, c.Since.UTC().Format(time.RFC3339))
	return []outbox.AlertCondition{c}, nil
}

// PassDone implements PassObserver: a pass that wrote what it had to uses up one of the
// polls that still report an ended outage.
func (s *storeUnreachable) PassDone(recorded bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !recorded || !s.reported {
		return
	}
	s.reported = false
	if s.replays--; s.replays <= 0 {
		s.outage = outbox.AlertCondition{}
	}
}

// PassObserver is a source that needs to know whether the evaluator's pass that polled
// it got its notices written (Evaluator.Evaluate tells it after every pass).
type PassObserver interface {
	PassDone(recorded bool)
}

// afterOutagePolls is how many recorded passes a store_unreachable outage is still
// reported after it ended: enough for an evaluator that reaches the database again to
// record it opened, then see it hold once before it resolves.
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
