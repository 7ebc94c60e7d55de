package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var _ = register("WrongLeaseTokenIsRejectedAndWritesNothing", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	acceptDue(t, s, t0)
	d := claim(t, s, t0, 1)[0]
	before := getDelivery(t, s, d.ID)
	wrong := d
	wrong.LeaseToken = "not-the-token"

	if err := s.Renew(ctx, d.ID, wrong.LeaseToken, t0.Add(time.Hour)); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("renew with a wrong token: err = %v, want ErrLeaseLost", err)
	}
	for _, status := range []outbox.DeliveryStatus{outbox.DeliverySent, outbox.DeliveryFailed, outbox.DeliveryDead} {
		c := completion(wrong, status, outbox.OutcomeSent, t0.Add(time.Second), &outbox.Event{Kind: outbox.EventDeliveryDead})
		if err := outbox.CompleteOne(ctx, s, c); !errors.Is(err, outbox.ErrLeaseLost) {
			t.Errorf("complete %s with a wrong token: err = %v, want ErrLeaseLost", status, err)
		}
	}
	if err := s.Release(ctx, d.ID, wrong.LeaseToken, t0.Add(time.Second)); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("release with a wrong token: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx, d.ID, "", t0.Add(time.Second)); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("release with an empty token: err = %v, want ErrLeaseLost", err)
	}
	if after := getDelivery(t, s, d.ID); !reflect.DeepEqual(after, before) {
		t.Errorf("row changed by rejected writes:\n got %+v\nwant %+v", after, before)
	}
	if as, _ := s.ListAttempts(ctx, d.ID); len(as) != 0 {
		t.Errorf("rejected completions wrote %d attempt rows", len(as))
	}
	if evs, _ := s.ListEvents(ctx, outbox.EventDeliveryDead, 0); len(evs) != 0 {
		t.Errorf("rejected completion wrote %d events", len(evs))
	}
})

var _ = register("RenewExtendsOnlyTheHoldersLease", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	acceptDue(t, s, t0)
	d := claim(t, s, t0, 1)[0]
	until := t0.Add(5 * time.Minute)
	if err := s.Renew(ctx, d.ID, d.LeaseToken, until); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if got := getDelivery(t, s, d.ID); !got.LockedUntil.Equal(until) || got.LeaseToken != d.LeaseToken {
		t.Errorf("after renew locked until %v token %q, want %v and the same token", got.LockedUntil, got.LeaseToken, until)
	}
	// The renewed lease is not reclaimable at the old expiry.
	if got := claimAs(t, s, "worker-b", t0.Add(2*testLease), 1); len(got) != 0 {
		t.Errorf("renewed lease was reclaimed before its new expiry")
	}
	complete(t, s, d, outbox.DeliverySent, outbox.OutcomeSent, t0.Add(time.Minute), nil)
	if err := s.Renew(ctx, d.ID, d.LeaseToken, until); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("renew after completion: err = %v, want ErrLeaseLost", err)
	}
})

var _ = register("CompleteSentRecordsAttemptAndClearsLease", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	acceptDue(t, s, t0)
	d := claim(t, s, t0, 1)[0]
	now := t0.Add(3 * time.Second)
	c := complete(t, s, d, outbox.DeliverySent, outbox.OutcomeSent, now, nil)

	got := getDelivery(t, s, d.ID)
	if got.Status != outbox.DeliverySent || !got.SentAt.Equal(now) || !got.UpdatedAt.Equal(now) ||
		got.Provider != "fake" || got.ProviderMessageID != c.ProviderMessageID || got.Attempts != 1 ||
		got.LeaseToken != "" || !got.LockedUntil.IsZero() {
		t.Errorf("sent delivery = %+v; want sent at %v by fake (%s), 1 attempt, lease cleared", got, now, c.ProviderMessageID)
	}
	as, err := s.ListAttempts(ctx, d.ID)
	if err != nil || len(as) != 1 {
		t.Fatalf("attempts: %d, %v; want 1", len(as), err)
	}
	if !reflect.DeepEqual(as[0], c.Attempt) {
		t.Errorf("attempt row differs:\n got %+v\nwant %+v", as[0], c.Attempt)
	}
	// The same completion again is a late duplicate: fenced off, nothing added.
	if err := outbox.CompleteOne(ctx, s, c); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("second complete: err = %v, want ErrLeaseLost", err)
	}
	if as, _ := s.ListAttempts(ctx, d.ID); len(as) != 1 {
		t.Errorf("second complete left %d attempts", len(as))
	}
	if got := claim(t, s, now.Add(24*time.Hour), 10); len(got) != 0 {
		t.Errorf("sent delivery claimed again")
	}
})

var _ = register("CompleteFailedSchedulesTheNextAttempt", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	acceptDue(t, s, t0)
	d := claim(t, s, t0, 1)[0]
	now := t0.Add(time.Second)
	c := complete(t, s, d, outbox.DeliveryFailed, outbox.OutcomeTemporary, now, nil)

	got := getDelivery(t, s, d.ID)
	if got.Status != outbox.DeliveryFailed || !got.NextAttemptAt.Equal(c.NextAttemptAt) || got.LastError != c.LastError ||
		got.LeaseToken != "" || !got.LockedUntil.IsZero() || !got.SentAt.IsZero() {
		t.Errorf("failed delivery = %+v; want failed, next attempt %v, last error %q, no lease", got, c.NextAttemptAt, c.LastError)
	}
	if got := claim(t, s, c.NextAttemptAt.Add(-time.Microsecond), 1); len(got) != 0 {
		t.Fatalf("failed delivery claimed before its next attempt time")
	}
	again := claim(t, s, c.NextAttemptAt, 1)
	if len(again) != 1 || again[0].Attempts != 2 {
		t.Fatalf("retry claim = %+v, want the delivery with attempts 2", again)
	}
	c2 := complete(t, s, again[0], outbox.DeliverySent, outbox.OutcomeSent, c.NextAttemptAt.Add(time.Second), nil)
	as, err := s.ListAttempts(ctx, d.ID)
	if err != nil || len(as) != 2 {
		t.Fatalf("attempts: %d, %v; want 2", len(as), err)
	}
	if !reflect.DeepEqual(as, []outbox.Attempt{c.Attempt, c2.Attempt}) {
		t.Errorf("attempt history differs:\n got %+v\nwant %+v", as, []outbox.Attempt{c.Attempt, c2.Attempt})
	}
})

var _ = register("CompleteDeadWritesAttemptAndEventTogether", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	acceptDue(t, s, t0)
	d := claim(t, s, t0, 1)[0]
	now := t0.Add(time.Second)
	ev := &outbox.Event{Kind: outbox.EventDeliveryDead, Data: []byte(`{"outcome":"permanent","attempts":1}`)}
	c := complete(t, s, d, outbox.DeliveryDead, outbox.OutcomePermanent, now, ev)

	got := getDelivery(t, s, d.ID)
	if got.Status != outbox.DeliveryDead || got.LastError != c.LastError || got.LeaseToken != "" || string(got.Payload) != string(d.Payload) {
		t.Errorf("dead delivery = %+v; want dead with last error %q, lease cleared, payload kept", got, c.LastError)
	}
	as, _ := s.ListAttempts(ctx, d.ID)
	if len(as) != 1 || as[0].Outcome != outbox.OutcomePermanent || as[0].ErrorCode != "MessageRejected" {
		t.Errorf("attempts = %+v, want one permanent MessageRejected", as)
	}
	evs, err := s.ListEvents(ctx, outbox.EventDeliveryDead, 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("dead events: %d, %v; want 1", len(evs), err)
	}
	if evs[0].DeliveryID != d.ID || evs[0].SubmissionID != d.SubmissionID || string(evs[0].Data) != string(ev.Data) {
		t.Errorf("dead event = %+v, want delivery %s, submission %s, data %s", evs[0], d.ID, d.SubmissionID, ev.Data)
	}
	if got := claim(t, s, now.Add(24*time.Hour), 10); len(got) != 0 {
		t.Errorf("dead delivery claimed")
	}
})

var _ = register("StaleWorkerIsFencedAfterReclaim", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	acceptDue(t, s, t0)
	a := claimAs(t, s, "worker-a", t0, 1)[0]
	// A stalls past its lease; B takes the delivery over and sends it.
	later := t0.Add(2 * testLease)
	b := claimAs(t, s, "worker-b", later, 1)[0]
	cb := complete(t, s, b, outbox.DeliverySent, outbox.OutcomeSent, later.Add(time.Second), nil)
	after := getDelivery(t, s, a.ID)

	// A wakes up and reports, in every way it could.
	for _, status := range []outbox.DeliveryStatus{outbox.DeliverySent, outbox.DeliveryFailed, outbox.DeliveryDead} {
		if err := outbox.CompleteOne(ctx, s, completion(a, status, outbox.OutcomeTemporary, later.Add(2*time.Second), nil)); !errors.Is(err, outbox.ErrLeaseLost) {
			t.Errorf("stale complete %s: err = %v, want ErrLeaseLost", status, err)
		}
	}
	if err := s.Renew(ctx, a.ID, a.LeaseToken, later.Add(time.Hour)); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("stale renew: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx, a.ID, a.LeaseToken, later); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("stale release: err = %v, want ErrLeaseLost", err)
	}
	if got := getDelivery(t, s, a.ID); !reflect.DeepEqual(got, after) || got.Status != outbox.DeliverySent {
		t.Errorf("row after stale writes = %+v, want B's outcome %+v", got, after)
	}
	as, _ := s.ListAttempts(ctx, a.ID)
	if !reflect.DeepEqual(as, []outbox.Attempt{cb.Attempt}) {
		t.Errorf("attempts = %+v, want only B's %+v", as, cb.Attempt)
	}
})

var _ = register("ReleaseReturnsTheDeliveryWithoutChargingAnAttempt", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	acceptDue(t, s, t0)
	d := claim(t, s, t0, 1)[0]
	now := t0.Add(10 * time.Second)
	if err := s.Release(ctx, d.ID, d.LeaseToken, now); err != nil {
		t.Fatalf("release: %v", err)
	}
	got := getDelivery(t, s, d.ID)
	if got.Status != outbox.DeliveryPending || got.Attempts != 0 || got.LeaseToken != "" || got.LeaseOwner != "" ||
		!got.LockedUntil.IsZero() || !got.NextAttemptAt.Equal(now) {
		t.Errorf("released delivery = %+v; want pending, 0 attempts, no lease, due at %v", got, now)
	}
	if err := s.Release(ctx, d.ID, d.LeaseToken, now); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("second release: err = %v, want ErrLeaseLost", err)
	}
	// Due at once, and the next claim is attempt 1 again.
	again := claim(t, s, now, 1)
	if len(again) != 1 || again[0].Attempts != 1 {
		t.Fatalf("claim after release = %+v, want the delivery at attempt 1", again)
	}

	// A delivery that had already failed once goes back to failed with its count.
	c := complete(t, s, again[0], outbox.DeliveryFailed, outbox.OutcomeTemporary, now, nil)
	second := claim(t, s, c.NextAttemptAt, 1)[0]
	if err := s.Release(ctx, second.ID, second.LeaseToken, c.NextAttemptAt); err != nil {
		t.Fatalf("release: %v", err)
	}
	got = getDelivery(t, s, d.ID)
	if got.Status != outbox.DeliveryFailed || got.Attempts != 1 || got.LastError != c.LastError {
		t.Errorf("released retry = status %s attempts %d last error %q; want failed, 1, %q", got.Status, got.Attempts, got.LastError, c.LastError)
	}
	if as, _ := s.ListAttempts(ctx, d.ID); len(as) != 1 {
		t.Errorf("release wrote attempts: %d rows, want 1", len(as))
	}
})

// A release at a later time is how the worker's pacing defers a send (docs/design.md,
// "Pacing"): the delivery is unleased at once, uncharged, and due only from that time.
var _ = register("ReleaseAtALaterTimeDefersTheDelivery", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	acceptDue(t, s, t0)
	d := claim(t, s, t0, 1)[0]
	due := t0.Add(90 * time.Second)
	if err := s.Release(ctx, d.ID, d.LeaseToken, due); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := getDelivery(t, s, d.ID); got.Status != outbox.DeliveryPending || got.Attempts != 0 || got.LeaseToken != "" ||
		!got.NextAttemptAt.Equal(due) {
		t.Errorf("deferred delivery = %s, %d attempts, lease %q, due %v; want pending, 0, none, due %v",
			got.Status, got.Attempts, got.LeaseToken, got.NextAttemptAt, due)
	}
	if got := claim(t, s, due.Add(-time.Microsecond), 1); len(got) != 0 {
		t.Fatalf("claimed %d before the deferred time", len(got))
	}
	if got := claim(t, s, due, 1); len(got) != 1 || got[0].ID != d.ID || got[0].Attempts != 1 {
		t.Fatalf("claim at the deferred time = %+v, want the delivery at attempt 1", got)
	}
	if as, _ := s.ListAttempts(ctx, d.ID); len(as) != 0 {
		t.Errorf("deferring wrote %d attempts, want none", len(as))
	}
})

var _ = register("RetryGivesDeadOrFailedDeliveriesAFreshBudget", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	dead := acceptDue(t, s, t0)
	d := claim(t, s, t0, 1)[0]
	c1 := complete(t, s, d, outbox.DeliveryDead, outbox.OutcomePermanent, t0.Add(time.Second), nil)

	now := t0.Add(time.Hour)
	if err := s.Retry(ctx, dead.ID, now); err != nil {
		t.Fatalf("retry dead: %v", err)
	}
	got := getDelivery(t, s, dead.ID)
	if got.Status != outbox.DeliveryPending || got.Attempts != 0 || !got.NextAttemptAt.Equal(now) || got.LastError != c1.LastError {
		t.Errorf("retried delivery = %+v; want pending, 0 attempts, due %v, last error kept", got, now)
	}
	if err := s.Retry(ctx, dead.ID, now); !errors.Is(err, outbox.ErrNotRetryable) {
		t.Errorf("retry of a pending delivery: err = %v, want ErrNotRetryable", err)
	}
	again := claim(t, s, now, 1)
	if len(again) != 1 || again[0].Attempts != 1 {
		t.Fatalf("claim after retry = %+v, want attempt 1", again)
	}
	if err := s.Retry(ctx, dead.ID, now); !errors.Is(err, outbox.ErrNotRetryable) {
		t.Errorf("retry of a sending delivery: err = %v, want ErrNotRetryable", err)
	}
	c2 := complete(t, s, again[0], outbox.DeliverySent, outbox.OutcomeSent, now.Add(time.Second), nil)
	// History is kept, and the new try does not collide with the old one's number.
	as, err := s.ListAttempts(ctx, dead.ID)
	if err != nil || len(as) != 2 {
		t.Fatalf("attempts after retry: %d, %v; want 2", len(as), err)
	}
	if as[0].Outcome != outbox.OutcomePermanent || as[1].Outcome != outbox.OutcomeSent || as[0].Attempt >= as[1].Attempt {
		t.Errorf("attempt history = %+v, want the permanent try then the sent one, in order", as)
	}
	if as[1].ProviderMessageID != c2.ProviderMessageID {
		t.Errorf("second attempt message id %q, want %q", as[1].ProviderMessageID, c2.ProviderMessageID)
	}
	if err := s.Retry(ctx, dead.ID, now); !errors.Is(err, outbox.ErrNotRetryable) {
		t.Errorf("retry of a sent delivery: err = %v, want ErrNotRetryable", err)
	}

	// A failed delivery may be retried by hand too, ahead of its schedule.
	f := acceptDue(t, s, now)
	fd := claim(t, s, now, 1)[0]
	fc := complete(t, s, fd, outbox.DeliveryFailed, outbox.OutcomeTemporary, now, nil)
	if err := s.Retry(ctx, f.ID, now.Add(time.Second)); err != nil {
		t.Fatalf("retry failed: %v", err)
	}
	if got := claim(t, s, now.Add(time.Second), 1); len(got) != 1 || got[0].ID != f.ID || !now.Add(time.Second).Before(fc.NextAttemptAt) {
		t.Errorf("retried failed delivery not due at once: %v", ids(got))
	}

	if err := s.Retry(ctx, NewSubmission("x").ID, now); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("retry of an unknown delivery: err = %v, want ErrNotFound", err)
	}
})

var _ = register("CompleteChecksTheStatusAndFillsWhatIsUnset", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	acceptDue(t, s, t0)
	d := claim(t, s, t0, 1)[0]
	before := getDelivery(t, s, d.ID)
	now := t0.Add(time.Second)

	open := completion(d, outbox.DeliveryPending, outbox.OutcomeTemporary, now, nil)
	if err := outbox.CompleteOne(ctx, s, open); err == nil || errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("complete to pending: err = %v, want a status error", err)
	}
	if got := getDelivery(t, s, d.ID); !reflect.DeepEqual(got, before) {
		t.Errorf("a rejected status changed the row:\n got %+v\nwant %+v", got, before)
	}

	// A failed completion without a next attempt time, attempt times or event details.
	c := completion(d, outbox.DeliveryFailed, outbox.OutcomeTemporary, now, &outbox.Event{Kind: "delivery.note"})
	c.NextAttemptAt, c.Attempt.StartedAt, c.Attempt.FinishedAt = time.Time{}, time.Time{}, time.Time{}
	ev := *c.Event
	if err := outbox.CompleteOne(ctx, s, c); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if !reflect.DeepEqual(*c.Event, ev) {
		t.Errorf("Complete changed the caller's event to %+v", *c.Event)
	}
	if got := getDelivery(t, s, d.ID); got.Status != outbox.DeliveryFailed || !got.NextAttemptAt.Equal(now) {
		t.Errorf("delivery = %s due %v, want failed and due at once (%v)", got.Status, got.NextAttemptAt, now)
	}
	as, err := s.ListAttempts(ctx, d.ID)
	if err != nil || len(as) != 1 || !as[0].StartedAt.Equal(now) || !as[0].FinishedAt.Equal(now) {
		t.Errorf("attempts = %+v (%v), want one started and finished at %v", as, err, now)
	}
	evs, err := s.ListEvents(ctx, "delivery.note", 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events: %+v (%v), want one", evs, err)
	}
	if e := evs[0]; e.DeliveryID != d.ID || e.SubmissionID != d.SubmissionID || string(e.Data) != "{}" || !e.At.Equal(now) {
		t.Errorf("event = %+v, want delivery %s, submission %s, data {}, at %v", e, d.ID, d.SubmissionID, now)
	}
})
