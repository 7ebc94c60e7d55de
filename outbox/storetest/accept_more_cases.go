package storetest

import (
	"errors"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var _ = register("AcceptRepeatedKeyWritesNothingAndReturnsOriginal", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	first := NewSubmission("contact", WithIdempotencyKey("k1"))
	MustAccept(t, s, first, NewDelivery(first, "email", "sales@example.com"))

	// The same content again (a retry after a lost answer): same fields, same hash.
	again := NewSubmission("contact", WithIdempotencyKey("k1"))
	againDelivery := NewDelivery(again, "email", "other@example.com")
	res := MustAccept(t, s, again, againDelivery)
	if res != (outbox.AcceptResult{ID: first.ID, Status: outbox.SubmissionAccepted, Duplicate: true}) {
		t.Fatalf("repeat accept = %+v, want the original %s accepted as duplicate", res, first.ID)
	}
	if _, err := s.GetSubmission(ctx, again.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("repeat submission stored (err %v)", err)
	}
	if _, err := s.GetDelivery(ctx, againDelivery.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("repeat delivery stored (err %v)", err)
	}
	got, err := s.GetSubmission(ctx, first.ID)
	if err != nil || got.Data[0].Value != "Ada Lovelace" {
		t.Errorf("original changed: %+v, %v", got, err)
	}
	if events, _ := s.ListEvents(ctx, "", 0); len(events) != 1 {
		t.Errorf("%d events, want 1", len(events))
	}

	// The key is scoped to the form, and no key means no deduplication.
	other := NewSubmission("newsletter", WithIdempotencyKey("k1"))
	if res := MustAccept(t, s, other); res.Duplicate || res.ID != other.ID {
		t.Errorf("same key on another form = %+v, want a new submission", res)
	}
	for range 2 {
		sub := NewSubmission("contact")
		if res := MustAccept(t, s, sub); res.Duplicate {
			t.Errorf("submission without key reported duplicate: %+v", res)
		}
		if got, err := s.GetSubmission(ctx, sub.ID); err != nil || got.IdempotencyKey != "" {
			t.Errorf("keyless submission read back as %+v, %v", got, err)
		}
	}
})

var _ = register("AcceptSameSubmissionIDTwiceIsDuplicate", func(t *testing.T, s outbox.Store) {
	// What a spool replay of an already stored submission does.
	ctx := testCtx(t)
	sub := NewSubmission("contact")
	d := NewDelivery(sub, "email", "sales@example.com")
	MustAccept(t, s, sub, d)
	res := MustAccept(t, s, sub, d)
	if res != (outbox.AcceptResult{ID: sub.ID, Status: outbox.SubmissionAccepted, Duplicate: true}) {
		t.Fatalf("second accept of the same id = %+v, want duplicate", res)
	}
	if ds, _ := s.ListDeliveries(ctx, sub.ID); len(ds) != 1 {
		t.Errorf("%d deliveries, want 1", len(ds))
	}
	if events, _ := s.ListEvents(ctx, "", 0); len(events) != 1 {
		t.Errorf("%d events, want 1", len(events))
	}
})

var _ = register("DeliveryUniquePerSubmissionRouteRecipient", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	sub := NewSubmission("contact")
	// One recipient on two routes, and two recipients on one route, are distinct deliveries.
	MustAccept(t, s, sub,
		NewDelivery(sub, "sales", "team@example.com"),
		NewDelivery(sub, "support", "team@example.com"),
		NewDelivery(sub, "support", "desk@example.com"))
	ds, err := s.ListDeliveries(ctx, sub.ID)
	if err != nil || len(ds) != 3 {
		t.Fatalf("%d deliveries (err %v), want 3", len(ds), err)
	}
	want := [][2]string{{"sales", "team@example.com"}, {"support", "desk@example.com"}, {"support", "team@example.com"}}
	for i, d := range ds {
		if [2]string{d.Route, d.Recipient} != want[i] {
			t.Errorf("delivery %d = %s/%s, want %s/%s", i, d.Route, d.Recipient, want[i][0], want[i][1])
		}
	}
	// Another submission may use the same route and recipient.
	sub2 := NewSubmission("contact")
	MustAccept(t, s, sub2, NewDelivery(sub2, "sales", "team@example.com"))
})

var _ = register("SpamAndQuarantineDeliveriesAreSkippedAndNeverClaimed", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	spam := NewSubmission("contact", WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot), WithCreatedAt(t0))
	quar := NewSubmission("contact", WithStatus(outbox.SubmissionQuarantined, outbox.ReasonOriginRejected), WithCreatedAt(t0))
	MustAccept(t, s, spam, NewDelivery(spam, "email", "sales@example.com"))
	// Left without a status, the store derives skipped from the submission's status.
	d := NewDelivery(quar, "email", "sales@example.com")
	d.Status = ""
	MustAccept(t, s, quar, d)
	for _, sub := range []*outbox.Submission{spam, quar} {
		ds, err := s.ListDeliveries(ctx, sub.ID)
		if err != nil || len(ds) != 1 || ds[0].Status != outbox.DeliverySkipped {
			t.Fatalf("deliveries of %s submission = %+v (err %v), want one skipped", sub.Status, ds, err)
		}
	}
	got := claim(t, s, t0.Add(365*24*3600e9), 100)
	if len(got) != 0 {
		t.Fatalf("claimed %d skipped deliveries, want none", len(got))
	}
})

var _ = register("ReadsOfUnknownIDsReturnErrNotFound", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	id := NewSubmission("x").ID
	if _, err := s.GetSubmission(ctx, id); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("get submission: err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetDelivery(ctx, id); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("get delivery: err = %v, want ErrNotFound", err)
	}
	if ds, err := s.ListDeliveries(ctx, id); err != nil || len(ds) != 0 {
		t.Errorf("list deliveries: %d, %v; want none", len(ds), err)
	}
	if as, err := s.ListAttempts(ctx, id); err != nil || len(as) != 0 {
		t.Errorf("list attempts: %d, %v; want none", len(as), err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("ping: %v", err)
	}
})

var _ = register("ListEventsFiltersByKindNewestFirst", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	var subs []*outbox.Submission
	for i := range 3 {
		sub := NewSubmission("contact", WithCreatedAt(t0.Add(minutes(i))))
		MustAccept(t, s, sub, NewDelivery(sub, "email", "sales@example.com"))
		subs = append(subs, sub)
	}
	// A dead-letter event between the received ones.
	d := claim(t, s, t0.Add(minutes(5)), 1)[0]
	complete(t, s, d, outbox.DeliveryDead, outbox.OutcomePermanent, t0.Add(minutes(5)), &outbox.Event{Kind: outbox.EventDeliveryDead})

	all, err := s.ListEvents(ctx, "", 0)
	if err != nil || len(all) != 4 {
		t.Fatalf("all events: %d, %v; want 4", len(all), err)
	}
	if all[0].Kind != outbox.EventDeliveryDead {
		t.Errorf("newest event is %s, want delivery.dead", all[0].Kind)
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].ID <= all[i].ID {
			t.Errorf("events not newest first: id %d before %d", all[i-1].ID, all[i].ID)
		}
	}
	received, err := s.ListEvents(ctx, outbox.EventSubmissionReceived, 2)
	if err != nil || len(received) != 2 {
		t.Fatalf("received events with limit 2: %d, %v", len(received), err)
	}
	if received[0].SubmissionID != subs[2].ID || received[1].SubmissionID != subs[1].ID {
		t.Errorf("received events are for %s, %s; want the two newest submissions", received[0].SubmissionID, received[1].SubmissionID)
	}
	dead, err := s.ListEvents(ctx, outbox.EventDeliveryDead, 10)
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead events: %d, %v; want 1", len(dead), err)
	}
	if dead[0].DeliveryID != d.ID || dead[0].SubmissionID != d.SubmissionID || !dead[0].At.Equal(t0.Add(minutes(5))) {
		t.Errorf("dead event = %+v, want delivery %s of submission %s at completion time", dead[0], d.ID, d.SubmissionID)
	}
})
