package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

const hookURL = "https://hooks.example.com/in/secret-token"

// acceptHooks stores n submissions, one webhook delivery each, created a second apart
// from t0, and returns the deliveries in created order.
func acceptHooks(t testing.TB, s outbox.Store, n int) []outbox.Delivery {
	t.Helper()
	out := make([]outbox.Delivery, n)
	for i := range n {
		sub := NewSubmission("contact", WithCreatedAt(t0.Add(time.Duration(i)*time.Second)))
		out[i] = NewDelivery(sub, "hook", hookURL)
		MustAccept(t, s, sub, out[i])
	}
	return out
}

func parkHook(t testing.TB, s outbox.Store, manual bool, now time.Time) outbox.Destination {
	t.Helper()
	dest := outbox.DestinationOf(outbox.Delivery{Channel: outbox.ChannelWebhook, Recipient: hookURL}, "")
	ok, err := s.ParkDestination(testCtx(t), outbox.Park{Destination: dest, Reason: "permanent gone", Manual: manual,
		By: "worker", Now: now, ProbeAt: now.Add(time.Minute), ProbeInterval: time.Minute})
	if err != nil || !ok {
		t.Fatalf("park: %v, %v (want newly parked)", ok, err)
	}
	return dest
}

func hold(t testing.TB, s outbox.Store, d outbox.Delivery, key string, now time.Time, a *outbox.Attempt) error {
	t.Helper()
	return s.HoldDelivery(testCtx(t), outbox.Hold{DeliveryID: d.ID, LeaseToken: d.LeaseToken, Key: key, Now: now,
		Attempt: a, LastError: "gone", ProbeMax: 4 * time.Minute})
}

// twoHeld stores two webhook leads, parks their destination at t0 (first probe at
// t0+1m) and holds both.
func twoHeld(t testing.TB, s outbox.Store) ([]outbox.Delivery, outbox.Destination) {
	t.Helper()
	ds := acceptHooks(t, s, 2)
	dest := parkHook(t, s, false, t0)
	for _, d := range claim(t, s, t0.Add(10*time.Second), 10) {
		if err := hold(t, s, d, dest.Key, t0, nil); err != nil {
			t.Fatal(err)
		}
	}
	return ds, dest
}

var _ = register("ParkedDeliveriesWaitWithAttemptsUnspentAndResumeInOrder", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	ds := acceptHooks(t, s, 3)
	now := t0.Add(time.Minute)
	dest := parkHook(t, s, false, now)
	if again, err := s.ParkDestination(ctx, outbox.Park{Destination: dest, Now: now}); err != nil || again {
		t.Fatalf("parking a parked destination: %v, %v; want false, nil", again, err)
	}
	// One event per park (not per repeated park), with the key and who; one per unpark
	// (below).
	parked, _ := s.ListEvents(ctx, outbox.EventDestinationParked, 0)
	if len(parked) != 1 || string(parked[0].Data) != `{"key":"`+dest.Key+`","channel":"webhook","reason":"permanent gone","by":"worker"}` {
		t.Errorf("destination.parked events: %+v", parked)
	}
	claimed := claim(t, s, now, 10)
	if len(claimed) != 3 {
		t.Fatalf("claimed %d, want 3", len(claimed))
	}
	// The first one failed (its attempt is recorded); the others are held at their claim.
	a := outbox.Attempt{DeliveryID: claimed[0].ID, Attempt: claimed[0].Attempts, Provider: "webhook", StartedAt: now,
		FinishedAt: now, Outcome: outbox.OutcomePermanent, HTTPStatus: 410, ErrorCode: "gone", Error: "gone"}
	if err := hold(t, s, claimed[0], dest.Key, now, &a); err != nil {
		t.Fatalf("hold the failed one: %v", err)
	}
	for _, d := range claimed[1:] {
		if err := hold(t, s, d, dest.Key, now, nil); err != nil {
			t.Fatalf("hold: %v", err)
		}
	}
	for _, d := range ds {
		got := getDelivery(t, s, d.ID)
		if got.Status != outbox.DeliveryParked || got.Attempts != 0 || got.LeaseToken != "" {
			t.Errorf("held delivery: status %s attempts %d token %q; want parked, 0, none", got.Status, got.Attempts, got.LeaseToken)
		}
	}
	if as, _ := s.ListAttempts(ctx, ds[0].ID); len(as) != 1 || as[0].HTTPStatus != 410 || as[0].Attempt != 1 {
		t.Errorf("attempts of the failed one: %+v, want the one 410", as)
	}
	if got := getDelivery(t, s, ds[0].ID); got.Provider != "webhook" || got.LastError != "gone" {
		t.Errorf("the failed one: provider %q, last error %q; want its attempt's", got.Provider, got.LastError)
	}
	if got := claim(t, s, now.Add(time.Hour), 10); len(got) != 0 {
		t.Fatalf("claimed %d parked deliveries", len(got))
	}
	// Parked deliveries are not terminal: retention keeps them.
	if res, err := s.Prune(ctx, t0.Add(24*time.Hour), 100); err != nil || res.Submissions != 0 {
		t.Fatalf("prune: %+v, %v; want nothing pruned", res, err)
	}
	list, err := s.ListParkedDestinations(ctx)
	if err != nil || len(list) != 1 || list[0].Key != dest.Key || list[0].Held != 3 || list[0].Leads != 3 ||
		list[0].Manual || !list[0].ProbeAt.Equal(now.Add(time.Minute)) || list[0].Reason != "permanent gone" {
		t.Fatalf("list: %+v, %v", list, err)
	}

	later := now.Add(10 * time.Minute)
	n, err := s.UnparkDestination(ctx, dest.Key, uuid.Nil, "ops", later)
	if err != nil || n != 3 {
		t.Fatalf("unpark: %d, %v; want 3 resumed", n, err)
	}
	if _, err := s.UnparkDestination(ctx, dest.Key, uuid.Nil, "ops", later); !errors.Is(err, outbox.ErrNotParked) {
		t.Errorf("second unpark: %v, want ErrNotParked", err)
	}
	// All due at later, a microsecond apart in created order (the last at later), so
	// that a claim takes them in that order.
	for i, d := range ds {
		want := later.Add(-time.Duration(len(ds)-1-i) * time.Microsecond)
		if got := getDelivery(t, s, d.ID); got.Status != outbox.DeliveryPending || !got.NextAttemptAt.Equal(want) {
			t.Errorf("resumed #%d: %s due %v, want pending due %v", i, got.Status, got.NextAttemptAt, want)
		}
	}
	got := claim(t, s, later, 10)
	if len(got) != 3 {
		t.Fatalf("claimed %d after unpark, want 3", len(got))
	}
	for i, d := range got {
		if d.ID != ds[i].ID || d.Attempts != 1 {
			t.Errorf("resumed #%d: %s with attempts %d, want %s (created order) on its first charged attempt", i, d.ID, d.Attempts, ds[i].ID)
		}
	}
	if list, _ := s.ListParkedDestinations(ctx); len(list) != 0 {
		t.Errorf("still listed after unpark: %+v", list)
	}
	unparked, _ := s.ListEvents(ctx, outbox.EventDestinationUnparked, 0)
	if len(unparked) != 1 || string(unparked[0].Data) != `{"key":"`+dest.Key+`","resumed":3,"by":"ops"}` {
		t.Errorf("destination.unparked events: %+v", unparked)
	}
})

var _ = register("HoldIsFencedAndOnlyWhileParked", func(t *testing.T, s outbox.Store) {
	ds := acceptHooks(t, s, 1)
	d := claim(t, s, t0, 1)[0]
	key := outbox.DestinationOf(d, "").Key
	if err := hold(t, s, d, key, t0, nil); !errors.Is(err, outbox.ErrNotParked) {
		t.Fatalf("hold while not parked: %v, want ErrNotParked", err)
	}
	parkHook(t, s, false, t0)
	wrong := d
	wrong.LeaseToken = "not-the-token"
	if err := hold(t, s, wrong, key, t0, nil); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Fatalf("hold with a wrong token: %v, want ErrLeaseLost", err)
	}
	if got := getDelivery(t, s, ds[0].ID); got.Status != outbox.DeliverySending {
		t.Errorf("status %s after rejected holds, want sending", got.Status)
	}
})

var _ = register("ProbeTakesTheOldestAndBacksOff", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	ds, dest := twoHeld(t, s)
	if id, err := s.StartProbe(ctx, dest.Key, t0.Add(30*time.Second), testLease); err != nil || id != uuid.Nil {
		t.Fatalf("probe before it is due: %s, %v", id, err)
	}
	at := t0.Add(time.Minute)
	id, err := s.StartProbe(ctx, dest.Key, at, testLease)
	if err != nil || id != ds[0].ID {
		t.Fatalf("probe: %s, %v; want the oldest, %s", id, err, ds[0].ID)
	}
	if id, _ := s.StartProbe(ctx, dest.Key, at, testLease); id != uuid.Nil {
		t.Fatalf("a second probe started while one is under way: %s", id)
	}
	probe := claim(t, s, at, 10)
	if len(probe) != 1 || probe[0].ID != ds[0].ID {
		t.Fatalf("claimed %v, want only the probe", ids(probe))
	}
	// The claimed probe is sent, not held.
	if err := hold(t, s, probe[0], dest.Key, at, nil); !errors.Is(err, outbox.ErrNotParked) {
		t.Fatalf("hold of the claimed probe: %v, want ErrNotParked", err)
	}
	// It fails: held again, its attempt recorded and given back, the next probe twice as far.
	a := outbox.Attempt{DeliveryID: probe[0].ID, Attempt: probe[0].Attempts, StartedAt: at, FinishedAt: at,
		Outcome: outbox.OutcomeTemporary, HTTPStatus: 503}
	if err := hold(t, s, probe[0], dest.Key, at, &a); err != nil {
		t.Fatalf("hold the failed probe: %v", err)
	}
	if got := getDelivery(t, s, ds[0].ID); got.Status != outbox.DeliveryParked || got.Attempts != 0 {
		t.Errorf("failed probe: status %s attempts %d, want parked with none spent", got.Status, got.Attempts)
	}
	list, _ := s.ListParkedDestinations(ctx)
	if len(list) != 1 || list[0].ProbeInterval != 2*time.Minute || !list[0].ProbeAt.Equal(at.Add(2*time.Minute)) {
		t.Fatalf("after a failed probe: %+v; want the next in 2m", list)
	}
	// A manual park stops the probes; a probe's unpark no longer applies.
	if again, err := s.ParkDestination(ctx, outbox.Park{Destination: dest, Manual: true, Now: at}); err != nil || again {
		t.Fatalf("manual park of a parked destination: %v, %v", again, err)
	}
	if id, _ := s.StartProbe(ctx, dest.Key, at.Add(time.Hour), testLease); id != uuid.Nil {
		t.Errorf("a manual park was probed")
	}
	if _, err := s.UnparkDestination(ctx, dest.Key, ds[0].ID, "ops", at); !errors.Is(err, outbox.ErrNotParked) {
		t.Errorf("a probe unparked a manual park: %v", err)
	}
})

var _ = register("ProbeSuccessUnparksOnlyForTheProbe", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	ds, dest := twoHeld(t, s)
	at := t0.Add(time.Minute)
	id, err := s.StartProbe(ctx, dest.Key, at, testLease)
	if err != nil || id != ds[0].ID {
		t.Fatalf("probe: %s, %v", id, err)
	}
	if _, err := s.UnparkDestination(ctx, dest.Key, ds[1].ID, "ops", at); !errors.Is(err, outbox.ErrNotParked) {
		t.Fatalf("unpark by a delivery that is not the probe: %v, want ErrNotParked", err)
	}
	n, err := s.UnparkDestination(ctx, dest.Key, ds[0].ID, "ops", at)
	if err != nil || n != 1 {
		t.Fatalf("unpark by the probe: %d, %v; want the one still held resumed", n, err)
	}
	if got := getDelivery(t, s, ds[1].ID); got.Status != outbox.DeliveryPending {
		t.Errorf("held delivery after unpark: %s, want pending", got.Status)
	}
})

var _ = register("MarkingSpamSkipsAParkedDelivery", func(t *testing.T, s outbox.Store) {
	ds, dest := twoHeld(t, s)
	if err := s.Act(testCtx(t), outbox.Action{Kind: outbox.ActionMarkSpam, SubmissionID: ds[0].SubmissionID, User: "op", Now: t0.Add(time.Minute)}); err != nil {
		t.Fatalf("mark spam: %v", err)
	}
	if got := getDelivery(t, s, ds[0].ID); got.Status != outbox.DeliverySkipped {
		t.Errorf("the spam submission's parked delivery is %s, want skipped (never sent on unpark)", got.Status)
	}
	if n, err := s.UnparkDestination(testCtx(t), dest.Key, uuid.Nil, "op", t0.Add(2*time.Minute)); err != nil || n != 1 {
		t.Errorf("unpark: %d, %v; want only the other lead resumed", n, err)
	}
})

var _ = register("ProbeWithNothingHeldWaitsAnInterval", func(t *testing.T, s outbox.Store) {
	dest := parkHook(t, s, false, t0) // first probe at t0+1m, nothing held
	at := t0.Add(time.Minute)
	if id, err := s.StartProbe(testCtx(t), dest.Key, at, testLease); err != nil || id != uuid.Nil {
		t.Fatalf("probe with nothing held: %s, %v", id, err)
	}
	list, err := s.ListParkedDestinations(testCtx(t))
	if err != nil || len(list) != 1 || !list[0].ProbeAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("after a probe with nothing held: %+v, %v; want the next look a minute later", list, err)
	}
})
