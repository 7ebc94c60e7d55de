package storetest

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The lead ledger's store side (outbox/ledger.go): counters kept per instance with
// "keep the greatest", and the rows counted per UTC day.

const day = 24 * time.Hour

var _ = register("LedgerRecordKeepsTheGreatestAndSumsInstances", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	d1 := outbox.UTCDay(t0)
	d0 := d1.Add(-day)
	a := []outbox.LedgerCount{
		{Day: d0, Form: "contact", Answered: 5, Spooled: 2, Replayed: 1},
		{Day: d1, Form: "contact", Answered: 3},
	}
	if err := s.RecordLedger(ctx, "host-a", a, t0); err != nil {
		t.Fatal(err)
	}
	// The same flush again, then an older one (a retry that arrived late): no change.
	if err := s.RecordLedger(ctx, "host-a", a, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLedger(ctx, "host-a", []outbox.LedgerCount{{Day: d0, Form: "contact", Answered: 4, Spooled: 2, Replayed: 1}}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLedger(ctx, "host-b", []outbox.LedgerCount{{Day: d1, Form: "contact", Answered: 2, Spooled: 1}}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLedger(ctx, "host-b", []outbox.LedgerCount{{Day: d1.Add(day), Form: "contact", Answered: 9}}, t0); err != nil {
		t.Fatal(err)
	}
	got, err := s.LedgerCounts(ctx, d0, d1.Add(day))
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Day.Before(got[j].Day) })
	want := []outbox.LedgerCount{
		{Day: d0, Form: "contact", Answered: 5, Spooled: 2, Replayed: 1},
		{Day: d1, Form: "contact", Answered: 5, Spooled: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ledger counts = %+v, want %+v (greatest per instance, summed, the next day left out)", got, want)
	}
})

var _ = register("LedgerRowsCountEachDayFormStatusAndRoute", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	d1 := outbox.UTCDay(t0)
	d0 := d1.Add(-day)
	at0, at1 := d0.Add(23*time.Hour+59*time.Minute), d1.Add(time.Minute) // either side of midnight

	var pending []outbox.Delivery
	for i := 0; i < 3; i++ {
		sub := NewSubmission("contact", WithCreatedAt(at1))
		d := NewDelivery(sub, "email", "sales@example.com")
		w := NewDelivery(sub, "hook", "https://hooks.example.com/x")
		MustAccept(t, s, sub, d, w)
		pending = append(pending, d)
	}
	spam := NewSubmission("contact", WithCreatedAt(at1), WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
	MustAccept(t, s, spam, NewDelivery(spam, "email", "sales@example.com"))
	quar := NewSubmission("contact", WithCreatedAt(at0), WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation))
	MustAccept(t, s, quar, NewDelivery(quar, "email", "sales@example.com"))
	other := NewSubmission("jobs", WithCreatedAt(at0))
	MustAccept(t, s, other, NewDelivery(other, "email", "hr@example.com"))
	test := NewSubmission("contact", WithCreatedAt(at1))
	test.Test = true
	MustAccept(t, s, test, NewDelivery(test, "email", "sales@example.com"))
	outside := NewSubmission("contact", WithCreatedAt(d0.Add(-time.Second)))
	MustAccept(t, s, outside, NewDelivery(outside, "email", "sales@example.com"))

	// One email delivery sent, one dead, one left pending; the webhooks stay pending.
	now := at1.Add(time.Hour)
	for _, c := range claim(t, s, now, 10) {
		switch c.ID {
		case pending[0].ID:
			complete(t, s, c, outbox.DeliverySent, outbox.OutcomeSent, now, nil)
		case pending[1].ID:
			complete(t, s, c, outbox.DeliveryDead, outbox.OutcomePermanent, now, nil)
		default:
			if err := s.Release(ctx, c.ID, c.LeaseToken, now); err != nil {
				t.Fatal(err)
			}
		}
	}

	got, err := s.LedgerRows(ctx, d0, d1.Add(day))
	if err != nil {
		t.Fatal(err)
	}
	sortLedgerRows(&got)
	wantSubs := []outbox.LedgerStatusCount{
		{Day: d0, Form: "contact", Status: outbox.SubmissionQuarantined, Count: 1},
		{Day: d0, Form: "jobs", Status: outbox.SubmissionAccepted, Count: 1},
		{Day: d1, Form: "contact", Status: outbox.SubmissionAccepted, Count: 3},
		{Day: d1, Form: "contact", Status: outbox.SubmissionSpam, Count: 1},
	}
	if !reflect.DeepEqual(got.Submissions, wantSubs) {
		t.Errorf("submissions = %+v\nwant %+v", got.Submissions, wantSubs)
	}
	wantDels := []outbox.LedgerDeliveryCount{
		{Day: d0, Form: "contact", Route: "email", Status: outbox.DeliverySkipped, Count: 1},
		{Day: d0, Form: "jobs", Route: "email", Status: outbox.DeliveryPending, Count: 1},
		{Day: d1, Form: "contact", Route: "email", Status: outbox.DeliveryDead, Count: 1},
		{Day: d1, Form: "contact", Route: "email", Status: outbox.DeliveryPending, Count: 1},
		{Day: d1, Form: "contact", Route: "email", Status: outbox.DeliverySent, Count: 1},
		{Day: d1, Form: "contact", Route: "email", Status: outbox.DeliverySkipped, Count: 1},
		{Day: d1, Form: "contact", Route: "hook", Status: outbox.DeliveryPending, Count: 3},
	}
	if !reflect.DeepEqual(got.Deliveries, wantDels) {
		t.Errorf("deliveries = %+v\nwant %+v", got.Deliveries, wantDels)
	}
	if len(got.Undelivered) != 0 || len(got.Erased) != 0 {
		t.Errorf("undelivered %+v, erased %+v, want none", got.Undelivered, got.Erased)
	}
})

var _ = register("LedgerRowsFindAcceptedWithoutDeliveryAndErasures", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	now := time.Now().UTC()
	today := outbox.UTCDay(now)
	lost := NewSubmission("contact") // accepted, routed, no delivery: what the ledger flags
	MustAccept(t, s, lost)
	autoreplyOnly := NewSubmission("contact")
	MustAccept(t, s, autoreplyOnly, NewAutoreply(autoreplyOnly, "ada@example.com", time.Hour))
	unrouted := NewSubmission("contact", WithStatus(outbox.SubmissionAccepted, outbox.ReasonNoRouteMatched))
	MustAccept(t, s, unrouted)
	spam := NewSubmission("contact", WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
	MustAccept(t, s, spam)
	// Held back and unrouted (no delivery planned), then released: accepted with its
	// reason cleared, and still not a loss.
	heldUnrouted := NewSubmission("contact", WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation))
	heldUnrouted.Events = []outbox.Event{{Kind: outbox.EventUnrouted, Data: []byte(`{}`)}}
	MustAccept(t, s, heldUnrouted)
	if err := s.ReleaseSubmission(ctx, heldUnrouted.ID, now); err != nil {
		t.Fatal(err)
	}
	delivered := NewSubmission("contact")
	MustAccept(t, s, delivered, NewDelivery(delivered, "email", "sales@example.com"))
	erased := NewSubmission("jobs")
	MustAccept(t, s, erased, NewDelivery(erased, "email", "hr@example.com"))
	if err := s.DeleteSubmission(ctx, erased.ID, now); err != nil {
		t.Fatal(err)
	}

	got, err := s.LedgerRows(ctx, today, today.Add(day))
	if err != nil {
		t.Fatal(err)
	}
	want := []outbox.LedgerFormDay{{Day: today, Form: "contact", Count: 2}}
	if !reflect.DeepEqual(got.Undelivered, want) {
		t.Errorf("undelivered = %+v, want %+v (the one without any delivery and the autoreply-only one)", got.Undelivered, want)
	}
	wantErased := []outbox.LedgerFormDay{{Day: today, Form: "jobs", Count: 1}}
	if !reflect.DeepEqual(got.Erased, wantErased) {
		t.Errorf("erased = %+v, want %+v", got.Erased, wantErased)
	}
	// The built ledger puts them side by side and flags the loss for a checked form.
	l, err := outbox.BuildLedger(ctx, s, outbox.LedgerQuery{Days: 1, Now: now, Checked: func(f string) bool { return f == "contact" }})
	if err != nil {
		t.Fatal(err)
	}
	bad := l.Mismatched()
	if len(bad) != 1 || bad[0].Form != "contact" || bad[0].Undelivered != 2 ||
		!reflect.DeepEqual(bad[0].Mismatches, []string{outbox.MismatchUndelivered}) {
		t.Errorf("mismatched = %+v, want contact with 2 undelivered", bad)
	}
})

func sortLedgerRows(r *outbox.LedgerRows) {
	sort.Slice(r.Submissions, func(i, j int) bool {
		a, b := r.Submissions[i], r.Submissions[j]
		if !a.Day.Equal(b.Day) {
			return a.Day.Before(b.Day)
		}
		if a.Form != b.Form {
			return a.Form < b.Form
		}
		return a.Status < b.Status
	})
	sort.Slice(r.Deliveries, func(i, j int) bool {
		a, b := r.Deliveries[i], r.Deliveries[j]
		if !a.Day.Equal(b.Day) {
			return a.Day.Before(b.Day)
		}
		if a.Form != b.Form {
			return a.Form < b.Form
		}
		if a.Route != b.Route {
			return a.Route < b.Route
		}
		return a.Status < b.Status
	})
}

var _ = register("LedgerPruneDropsTheDaysBeforeTheCutoff", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	d1 := outbox.UTCDay(t0)
	counts := []outbox.LedgerCount{{Day: d1.Add(-2 * day), Form: "contact", Answered: 1}, {Day: d1.Add(-day), Form: "contact", Answered: 2},
		{Day: d1, Form: "contact", Answered: 3}}
	if err := s.RecordLedger(ctx, "host-a", counts, t0); err != nil {
		t.Fatal(err)
	}
	// The cutoff falls inside yesterday: yesterday is kept, the day before goes.
	if err := s.PruneLedger(ctx, d1.Add(-day+time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := s.LedgerCounts(ctx, d1.Add(-3*day), d1.Add(day))
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Day.Before(got[j].Day) })
	if !reflect.DeepEqual(got, counts[1:]) {
		t.Errorf("after the prune: %+v, want %+v", got, counts[1:])
	}
})
