package outbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// TestPrunerPrunesOnScheduleByItsClock drives the retention loop with a manual clock: the
// first pass at Start prunes what is already expired, in batches; the next pass, one
// interval later by the clock, prunes what expired meanwhile. Live work is never pruned.
func TestPrunerPrunesOnScheduleByItsClock(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		now := clock.Now()
		const keep = 365 * 24 * time.Hour
		spam := func(age time.Duration) *outbox.Submission {
			sub := storetest.NewSubmission("contact", storetest.WithCreatedAt(now.Add(-age)),
				storetest.WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
			storetest.MustAccept(t, s, sub, storetest.NewDelivery(sub, "email", "sales@example.com"))
			return sub
		}
		expired := []*outbox.Submission{spam(keep + 3*time.Hour), spam(keep + 2*time.Hour), spam(keep + time.Hour)}
		soon := spam(keep - 30*time.Minute)
		// An accepted submission with a due delivery: as old as the rest, never pruned.
		due := storetest.NewSubmission("contact", storetest.WithCreatedAt(now.Add(-keep-4*time.Hour)))
		storetest.MustAccept(t, s, due, storetest.NewDelivery(due, "email", "sales@example.com"))

		passes := make(chan outbox.PruneReport, 4)
		p, err := outbox.NewPruner(outbox.RetentionConfig{
			Ops:    s,
			MaxAge: keep,
			Batch:  2,
			Now:    clock.Now,
			After:  clock.After,
			OnPass: func(r outbox.PruneReport, err error) {
				if err != nil {
					t.Errorf("prune pass: %v", err)
				}
				passes <- r
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		p.Start(ctxFor(t))
		defer p.Stop()

		if r := <-passes; r.Submissions != 3 {
			t.Fatalf("first pass pruned %d submissions, want 3", r.Submissions)
		}
		for _, sub := range expired {
			if _, err := s.GetSubmission(ctxFor(t), sub.ID); !errors.Is(err, outbox.ErrNotFound) {
				t.Errorf("expired submission %s still there (err %v)", sub.ID, err)
			}
		}
		for _, sub := range []*outbox.Submission{soon, due} {
			if _, err := s.GetSubmission(ctxFor(t), sub.ID); err != nil {
				t.Errorf("submission %s pruned too early: %v", sub.ID, err)
			}
		}

		waitFor(t, 10*time.Second, "the pruner to wait for its next pass", func() bool { return clock.Waiters() > 0 })
		clock.Advance(time.Hour)
		if r := <-passes; r.Submissions != 1 {
			t.Fatalf("second pass pruned %d submissions, want 1", r.Submissions)
		}
		if _, err := s.GetSubmission(ctxFor(t), soon.ID); !errors.Is(err, outbox.ErrNotFound) {
			t.Errorf("submission expired since the first pass is still there (err %v)", err)
		}
		if _, err := s.GetSubmission(ctxFor(t), due.ID); err != nil {
			t.Errorf("submission with a due delivery was pruned: %v", err)
		}
	})
}

// TestPrunerStandsAsideWhileAnotherHoldsTheLock: a pass finding the pruner lock taken
// (another instance pruning) deletes nothing and says so.
func TestPrunerStandsAsideWhileAnotherHoldsTheLock(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		sub := storetest.NewSubmission("contact", storetest.WithCreatedAt(clock.Now().Add(-48*time.Hour)),
			storetest.WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
		storetest.MustAccept(t, s, sub)
		unlock, ok, err := s.LockPruner(ctxFor(t))
		if err != nil || !ok {
			t.Fatalf("lock: ok %v err %v", ok, err)
		}
		p, err := outbox.NewPruner(outbox.RetentionConfig{Ops: s, MaxAge: time.Hour, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.RunOnce(ctxFor(t))
		if err != nil || !r.Busy || r.Submissions != 0 {
			t.Fatalf("pass while locked = %+v (err %v), want busy and nothing pruned", r, err)
		}
		unlock()
		if r, err := p.RunOnce(ctxFor(t)); err != nil || r.Submissions != 1 {
			t.Fatalf("pass after unlock = %+v (err %v), want 1 pruned", r, err)
		}
	})
}

// TestPrunerDropsTheLedgerCountsWithTheRows: a pass ends by deleting the lead ledger's
// counts of the days wholly before its cutoff, which retention's judgement skips anyway.
func TestPrunerDropsTheLedgerCountsWithTheRows(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		now := clock.Now()
		const keep = 48 * time.Hour
		old, kept := outbox.UTCDay(now.Add(-keep-24*time.Hour)), outbox.UTCDay(now)
		if err := s.RecordLedger(ctxFor(t), "host-a", []outbox.LedgerCount{{Day: old, Form: "contact", Answered: 1},
			{Day: kept, Form: "contact", Answered: 2}}, now); err != nil {
			t.Fatal(err)
		}
		p, err := outbox.NewPruner(outbox.RetentionConfig{Ops: s, Ledger: s, MaxAge: keep, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.RunOnce(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		got, err := s.LedgerCounts(ctxFor(t), old, kept.Add(24*time.Hour))
		if err != nil || len(got) != 1 || !got[0].Day.Equal(kept) {
			t.Errorf("ledger counts after the pass: %+v (%v), want only %s's", got, err, kept)
		}
	})
}
