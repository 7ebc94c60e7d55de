package storetest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// digestOf builds the digest of (contact, daily) for the hour starting at start, listing
// items, with one delivery to owner@example.com.
func digestOf(start time.Time, items ...uuid.UUID) (outbox.Digest, []outbox.Delivery) {
	d := outbox.Digest{Form: "contact", Route: "daily", PeriodStart: start, PeriodEnd: start.Add(time.Hour),
		Items: items, CreatedAt: start.Add(time.Hour + 10*time.Second),
		Event: outbox.Event{Kind: outbox.EventDigestCreated, Data: json.RawMessage(`{"form":"contact"}`)}}
	p := outbox.Payload{To: "owner@example.com", Subject: "Digest", Text: "listed\n"}
	del := outbox.Delivery{ID: uuid.Must(uuid.NewV7()), Route: "daily", Channel: outbox.ChannelEmail,
		Recipient: "owner@example.com", MaxAttempts: 8, Payload: p.AppendJSON(nil)}
	return d, []outbox.Delivery{del}
}

func undigested(t testing.TB, s outbox.Store, from, until time.Time) []uuid.UUID {
	t.Helper()
	items, err := s.UndigestedSubmissions(testCtx(t), "contact", "daily", from, until)
	if err != nil {
		t.Fatalf("undigested submissions: %v", err)
	}
	out := make([]uuid.UUID, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func createDigest(t testing.TB, s outbox.Store, d outbox.Digest, ds []outbox.Delivery) bool {
	t.Helper()
	ok, err := s.CreateDigest(testCtx(t), d, ds)
	if err != nil {
		t.Fatalf("create digest: %v", err)
	}
	return ok
}

var _ = register("DigestListsEachAcceptedSubmissionOncePerRoute", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	start := t0.Truncate(time.Hour)
	first := NewSubmission("contact", WithCreatedAt(start.Add(minutes(1))), WithFields("name", "Ada"))
	second := NewSubmission("contact", WithCreatedAt(start.Add(minutes(2))))
	// A test submission (a `_test` post, a canary) is not a lead: no digest lists it.
	test := NewSubmission("contact", WithCreatedAt(start.Add(minutes(5))))
	test.Test = true
	spam := NewSubmission("contact", WithCreatedAt(start.Add(minutes(3))), WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
	other := NewSubmission("newsletter", WithCreatedAt(start.Add(minutes(4))))
	atEnd := NewSubmission("contact", WithCreatedAt(start.Add(time.Hour))) // the next period
	for _, sub := range []*outbox.Submission{second, first, test, spam, other, atEnd} {
		MustAccept(t, s, sub)
	}

	items, err := s.UndigestedSubmissions(ctx, "contact", "daily", start, start.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].ID != first.ID || items[1].ID != second.ID {
		t.Fatalf("undigested = %+v, want the two accepted contact submissions of the hour that are not tests, oldest first", items)
	}
	if !items[0].CreatedAt.Equal(first.CreatedAt) || len(items[0].Data) != 1 || items[0].Data[0] != (outbox.Field{Name: "name", Value: "Ada"}) {
		t.Errorf("item = %+v, want created_at %s, data name=Ada", items[0], first.CreatedAt)
	}

	d, ds := digestOf(start, first.ID, second.ID)
	if !createDigest(t, s, d, ds) {
		t.Fatal("create digest = false on a fresh period")
	}
	got := getDelivery(t, s, ds[0].ID)
	if got.SubmissionID != first.ID || got.Route != "daily" || got.Channel != outbox.ChannelEmail ||
		got.Status != outbox.DeliveryPending || got.MaxAttempts != 8 || !got.NextAttemptAt.Equal(d.CreatedAt) {
		t.Errorf("digest delivery = %+v, want pending on submission %s, due %s", got, first.ID, d.CreatedAt)
	}
	var p outbox.Payload
	if err := json.Unmarshal(got.Payload, &p); err != nil || p.Subject != "Digest" || p.To != "owner@example.com" {
		t.Errorf("payload = %s (%v)", got.Payload, err)
	}
	// The worker finds it like any due delivery.
	if claimed := claim(t, s, d.CreatedAt, 10); len(claimed) != 1 || claimed[0].ID != ds[0].ID {
		t.Errorf("claim = %v, want the digest delivery", ids(claimed))
	}
	evs, err := s.ListEvents(ctx, outbox.EventDigestCreated, 10)
	if err != nil || len(evs) != 1 || evs[0].SubmissionID != first.ID || string(evs[0].Data) != `{"form":"contact"}` {
		t.Errorf("digest.created events = %+v (%v)", evs, err)
	}
	if left := undigested(t, s, start, start.Add(2*time.Hour)); len(left) != 1 || left[0] != atEnd.ID {
		t.Errorf("undigested after the digest = %v, want only %s", left, atEnd.ID)
	}
	// Another route of the same form lists independently.
	if items, err := s.UndigestedSubmissions(ctx, "contact", "weekly", start, start.Add(time.Hour)); err != nil || len(items) != 2 {
		t.Errorf("undigested for another route = %d (%v), want 2", len(items), err)
	}
	periods, err := s.DigestPeriods(ctx, "contact", "daily", start.Add(-time.Hour), start.Add(2*time.Hour))
	if err != nil || len(periods) != 1 || !periods[0].Equal(start) {
		t.Errorf("digest periods = %v (%v), want [%s]", periods, err, start)
	}

	// A second digest of the period writes nothing, even listing another submission.
	again, againDs := digestOf(start, atEnd.ID)
	if createDigest(t, s, again, againDs) {
		t.Error("second digest of one period = true")
	}
	// A digest of another period listing an already listed submission writes nothing
	// either: not its row, not its delivery, not the new item.
	next, nextDs := digestOf(start.Add(time.Hour), atEnd.ID, first.ID)
	if createDigest(t, s, next, nextDs) {
		t.Error("digest listing an already listed submission = true")
	}
	for _, id := range []uuid.UUID{againDs[0].ID, nextDs[0].ID} {
		if _, err := s.GetDelivery(ctx, id); err == nil {
			t.Errorf("delivery %s of a refused digest was written", id)
		}
	}
	if periods, _ := s.DigestPeriods(ctx, "contact", "daily", start, start.Add(3*time.Hour)); len(periods) != 1 {
		t.Errorf("digest periods after refused digests = %v, want one", periods)
	}
	if left := undigested(t, s, start, start.Add(2*time.Hour)); len(left) != 1 || left[0] != atEnd.ID {
		t.Errorf("undigested after refused digests = %v, want %s", left, atEnd.ID)
	}
})

var _ = register("DigestRouteSinceKeepsTheFirstTime", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	got, err := s.DigestRouteSince(ctx, "contact", "daily", t0)
	if err != nil || !got.Equal(t0.Truncate(time.Microsecond)) {
		t.Fatalf("first DigestRouteSince = %s (%v), want %s", got, err, t0)
	}
	got, err = s.DigestRouteSince(ctx, "contact", "daily", t0.Add(time.Hour))
	if err != nil || !got.Equal(t0.Truncate(time.Microsecond)) {
		t.Errorf("second DigestRouteSince = %s (%v), want the first %s", got, err, t0)
	}
	if got, err := s.DigestRouteSince(ctx, "other", "daily", t0.Add(time.Hour)); err != nil || !got.Equal(t0.Add(time.Hour).Truncate(time.Microsecond)) {
		t.Errorf("another form's DigestRouteSince = %s (%v)", got, err)
	}
})

// Closers in several processes race for one period: the unique key lets exactly one
// digest through, and the others write nothing.
var _ = register("DigestConcurrentCreateMakesOne", func(t *testing.T, s outbox.Store) {
	start := t0.Truncate(time.Hour)
	sub := NewSubmission("contact", WithCreatedAt(start.Add(minutes(5))))
	MustAccept(t, s, sub)
	const racers = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []uuid.UUID
	for range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, ds := digestOf(start, sub.ID)
			ok, err := s.CreateDigest(testCtx(t), d, ds)
			if err != nil {
				t.Errorf("create digest: %v", err)
				return
			}
			if ok {
				mu.Lock()
				won = append(won, ds[0].ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d of %d racing digests were written, want 1", len(won), racers)
	}
	ds, err := s.ListDeliveries(testCtx(t), sub.ID)
	if err != nil || len(ds) != 1 || ds[0].ID != won[0] {
		t.Errorf("deliveries = %+v (%v), want only the winner's", ds, err)
	}
})

// Erasing a listed submission takes its digest_items row with it (the digest row stays,
// so the period is not digested again), and erasing the anchor takes the digest's
// deliveries (docs/design.md, "Digests": where the deliveries hang).
var _ = register("DigestItemsGoWithTheirSubmission", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	start := t0.Truncate(time.Hour)
	anchor := NewSubmission("contact", WithCreatedAt(start.Add(minutes(1))))
	listed := NewSubmission("contact", WithCreatedAt(start.Add(minutes(2))))
	MustAccept(t, s, anchor)
	MustAccept(t, s, listed)
	d, ds := digestOf(start, anchor.ID, listed.ID)
	if !createDigest(t, s, d, ds) {
		t.Fatal("create digest = false")
	}
	if err := s.DeleteSubmission(ctx, listed.ID, start.Add(2*time.Hour)); err != nil {
		t.Fatalf("erase a listed submission: %v", err)
	}
	if _, err := s.GetDelivery(ctx, ds[0].ID); err != nil {
		t.Errorf("the digest delivery went with a listed submission that is not its anchor: %v", err)
	}
	if err := s.DeleteSubmission(ctx, anchor.ID, start.Add(2*time.Hour)); err != nil {
		t.Fatalf("erase the anchor: %v", err)
	}
	if _, err := s.GetDelivery(ctx, ds[0].ID); err == nil {
		t.Error("the digest delivery outlived its anchor submission")
	}
	if periods, err := s.DigestPeriods(ctx, "contact", "daily", start, start.Add(time.Hour)); err != nil || len(periods) != 1 {
		t.Errorf("digest periods after erasure = %v (%v), want the period still digested", periods, err)
	}
})

// A digest whose event carries no data, with a delivery without payload, stores the
// empty object for both (storeflow.CreateDigest; the stores' json columns).
var _ = register("DigestWithoutDataStoresEmptyObjects", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	start := t0.Truncate(time.Hour)
	sub := NewSubmission("contact", WithCreatedAt(start.Add(minutes(1))))
	MustAccept(t, s, sub)
	d, ds := digestOf(start, sub.ID)
	d.Event.Data, ds[0].Payload = nil, nil
	if !createDigest(t, s, d, ds) {
		t.Fatal("create digest = false on a fresh period")
	}
	evs, err := s.ListEvents(ctx, outbox.EventDigestCreated, 10)
	if err != nil || len(evs) != 1 || string(evs[0].Data) != "{}" || evs[0].SubmissionID != sub.ID {
		t.Errorf("digest.created events = %+v (%v), want one about %s with data {}", evs, err, sub.ID)
	}
	if got := getDelivery(t, s, ds[0].ID); string(got.Payload) != "{}" {
		t.Errorf("digest delivery payload = %q, want {}", got.Payload)
	}
})
