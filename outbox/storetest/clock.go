package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// t0 is the suite's fixed "now": every time in the suite is derived from it, so due
// times, leases and backoff are exact and never depend on the machine's clock.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 678901000, time.UTC)

// minutes is i minutes.
func minutes(i int) time.Duration { return time.Duration(i) * time.Minute }

const testLease = time.Minute

// acceptDue stores one accepted submission with one delivery due at due.
func acceptDue(t testing.TB, s outbox.Store, due time.Time) outbox.Delivery {
	t.Helper()
	sub := NewSubmission("contact", WithCreatedAt(due))
	d := NewDelivery(sub, "email", "sales@example.com")
	MustAccept(t, s, sub, d)
	return d
}

func claim(t testing.TB, s outbox.Store, now time.Time, limit int) []outbox.Delivery {
	t.Helper()
	return claimAs(t, s, "worker-a", now, limit)
}

func claimAs(t testing.TB, s outbox.Store, owner string, now time.Time, limit int) []outbox.Delivery {
	t.Helper()
	got, err := s.Claim(testCtx(t), outbox.ClaimParams{Owner: owner, Limit: limit, Lease: testLease, Now: now})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return got
}

func ids(ds []outbox.Delivery) []uuid.UUID {
	out := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// completion builds the Completion a worker would write for a claimed delivery.
func completion(d outbox.Delivery, status outbox.DeliveryStatus, outcome outbox.Outcome, now time.Time, ev *outbox.Event) outbox.Completion {
	c := outbox.Completion{
		DeliveryID: d.ID,
		LeaseToken: d.LeaseToken,
		Status:     status,
		Provider:   "fake",
		Attempt: outbox.Attempt{
			DeliveryID: d.ID,
			Attempt:    d.Attempts,
			Provider:   "fake",
			StartedAt:  now.Add(-time.Second),
			FinishedAt: now,
			Outcome:    outcome,
		},
		Now:   now,
		Event: ev,
	}
	switch status {
	case outbox.DeliverySent:
		c.ProviderMessageID = "msg-" + d.ID.String()
		c.Attempt.ProviderMessageID = c.ProviderMessageID
		c.Attempt.HTTPStatus = 200
	case outbox.DeliveryFailed:
		c.NextAttemptAt = now.Add(30 * time.Second)
		c.LastError = "temporary: 503 from provider"
		c.Attempt.HTTPStatus = 503
		c.Attempt.ErrorCode = "ServiceUnavailable"
		c.Attempt.Error = c.LastError
	case outbox.DeliveryDead:
		c.LastError = "permanent: recipient rejected"
		c.Attempt.HTTPStatus = 400
		c.Attempt.ErrorCode = "MessageRejected"
		c.Attempt.Error = c.LastError
	}
	return c
}

func complete(t testing.TB, s outbox.Store, d outbox.Delivery, status outbox.DeliveryStatus, outcome outbox.Outcome, now time.Time, ev *outbox.Event) outbox.Completion {
	t.Helper()
	c := completion(d, status, outcome, now, ev)
	if err := outbox.CompleteOne(testCtx(t), s, c); err != nil {
		t.Fatalf("complete %s: %v", status, err)
	}
	return c
}

func getDelivery(t testing.TB, s outbox.Store, id uuid.UUID) outbox.Delivery {
	t.Helper()
	d, err := s.GetDelivery(testCtx(t), id)
	if err != nil {
		t.Fatalf("get delivery: %v", err)
	}
	return *d
}
