package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var _ = register("AcceptWritesSubmissionDeliveriesAndEvent", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	sub := NewSubmission("contact", WithIdempotencyKey("key-1"))
	sub.Test = true
	// Planned in reverse of the order ListDeliveries promises, to check its ordering.
	ds := []outbox.Delivery{
		NewDelivery(sub, "webhook", "https://crm.example.com/hook"),
		NewDelivery(sub, "email", "sales@example.com"),
		NewDelivery(sub, "email", "ops@example.com"),
	}
	res, err := outbox.AcceptOne(ctx, s, sub, ds)
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	if res != (outbox.AcceptResult{ID: sub.ID, Status: outbox.SubmissionAccepted}) {
		t.Fatalf("accept result = %+v, want id %s accepted, not duplicate", res, sub.ID)
	}

	got, err := s.GetSubmission(ctx, sub.ID)
	if err != nil {
		t.Fatalf("get submission: %v", err)
	}
	if !reflect.DeepEqual(got, sub) {
		t.Errorf("stored submission differs:\n got %+v\nwant %+v", got, sub)
	}
	// The visitor's field order survives the round trip, not just the values.
	wantJSON, _ := json.Marshal(sub.Data)
	gotJSON, _ := json.Marshal(got.Data)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("data = %s, want %s", gotJSON, wantJSON)
	}

	list, err := s.ListDeliveries(ctx, sub.ID)
	if err != nil {
		t.Fatalf("list deliveries: %v", err)
	}
	want := []outbox.Delivery{ds[2], ds[1], ds[0]} // email/ops, email/sales, webhook
	if len(list) != len(want) {
		t.Fatalf("got %d deliveries, want %d", len(list), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(list[i], want[i]) {
			t.Errorf("delivery %d differs:\n got %+v\nwant %+v", i, list[i], want[i])
		}
		if !bytes.Equal(list[i].Payload, want[i].Payload) {
			t.Errorf("delivery %d payload = %s, want %s", i, list[i].Payload, want[i].Payload)
		}
		one, err := s.GetDelivery(ctx, want[i].ID)
		if err != nil {
			t.Fatalf("get delivery: %v", err)
		}
		if !reflect.DeepEqual(*one, want[i]) {
			t.Errorf("get delivery %d differs:\n got %+v\nwant %+v", i, *one, want[i])
		}
	}

	events, err := s.ListEvents(ctx, outbox.EventSubmissionReceived, 0)
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	if len(events) != 1 {
		t.Fatalf("got %d submission.received events, want 1", len(events))
	}
	e := events[0]
	if e.Kind != outbox.EventSubmissionReceived || e.SubmissionID != sub.ID || e.DeliveryID != [16]byte{} || !e.At.Equal(sub.CreatedAt) {
		t.Errorf("event = %+v, want submission.received for %s at %v", e, sub.ID, sub.CreatedAt)
	}
	var data map[string]string
	if err := json.Unmarshal(e.Data, &data); err != nil {
		t.Fatalf("event data %s: %v", e.Data, err)
	}
	if !reflect.DeepEqual(data, map[string]string{"form": "contact", "status": "accepted"}) {
		t.Errorf("event data = %s, want only form and status (no visitor data)", e.Data)
	}
})

var _ = register("AcceptRollsBackWhenADeliveryInsertFails", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	sub := NewSubmission("contact", WithIdempotencyKey("k"))
	d1 := NewDelivery(sub, "email", "sales@example.com")
	d2 := NewDelivery(sub, "email", "sales@example.com") // violates UNIQUE(submission, route, recipient)
	if _, err := outbox.AcceptOne(ctx, s, sub, []outbox.Delivery{d1, d2}); err == nil {
		t.Fatal("accept with two deliveries to one route and recipient succeeded, want an error")
	}
	if _, err := s.GetSubmission(ctx, sub.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("get submission after failed accept: err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetDelivery(ctx, d1.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("get first delivery after failed accept: err = %v, want ErrNotFound", err)
	}
	if events, err := s.ListEvents(ctx, "", 0); err != nil || len(events) != 0 {
		t.Errorf("events after failed accept = %d (err %v), want none", len(events), err)
	}
	// The key was not consumed: a correct retry of the same post is stored normally.
	res, err := outbox.AcceptOne(ctx, s, sub, []outbox.Delivery{d1})
	if err != nil || res.Duplicate || res.ID != sub.ID {
		t.Fatalf("accept after rollback = %+v, %v; want a fresh insert of %s", res, err, sub.ID)
	}
})

var _ = register("AcceptConcurrentSameIdempotencyKeyStoresOne", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	const n = 20
	subs := make([]*outbox.Submission, n)
	for i := range subs {
		subs[i] = NewSubmission("contact", WithIdempotencyKey("same-key"))
	}
	results := make([]outbox.AcceptResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = outbox.AcceptOne(ctx, s, subs[i], []outbox.Delivery{NewDelivery(subs[i], "email", "sales@example.com")})
		})
	}
	close(start)
	wg.Wait()

	var winner *outbox.Submission
	duplicates := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("accept %d: %v", i, errs[i])
		}
		if results[i].Duplicate {
			duplicates++
		} else {
			if winner != nil {
				t.Fatalf("two accepts stored a submission: %s and %s", winner.ID, subs[i].ID)
			}
			winner = subs[i]
		}
	}
	if winner == nil || duplicates != n-1 {
		t.Fatalf("%d duplicates and winner %v, want exactly one stored and %d duplicates", duplicates, winner, n-1)
	}
	for i := range n {
		if results[i].ID != winner.ID || results[i].Status != outbox.SubmissionAccepted {
			t.Errorf("caller %d got %+v, want id %s accepted", i, results[i], winner.ID)
		}
		if subs[i] != winner {
			if _, err := s.GetSubmission(ctx, subs[i].ID); !errors.Is(err, outbox.ErrNotFound) {
				t.Errorf("losing submission %d was stored (err %v)", i, err)
			}
			if ds, _ := s.ListDeliveries(ctx, subs[i].ID); len(ds) != 0 {
				t.Errorf("losing submission %d has %d deliveries", i, len(ds))
			}
		}
	}
	if ds, err := s.ListDeliveries(ctx, winner.ID); err != nil || len(ds) != 1 {
		t.Errorf("winner has %d deliveries (err %v), want 1", len(ds), err)
	}
	events, err := s.ListEvents(ctx, outbox.EventSubmissionReceived, 0)
	if err != nil || len(events) != 1 {
		t.Errorf("%d submission.received events (err %v), want 1", len(events), err)
	}
})
