package storetest

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func subIDs(subs []outbox.Submission) []uuid.UUID {
	out := make([]uuid.UUID, len(subs))
	for i, s := range subs {
		out[i] = s.ID
	}
	return out
}

var _ = register("OpsListSubmissionsFiltersAndPagesNewestFirst", func(t *testing.T, s outbox.Store) {
	o := outbox.Ops(s)
	var all []*outbox.Submission
	for i := range 5 {
		form := "contact"
		if i%2 == 1 {
			form = "quote"
		}
		opts := []SubmissionOption{WithCreatedAt(t0.Add(minutes(i)))}
		if i == 4 {
			opts = append(opts, WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation))
		}
		sub := NewSubmission(form, opts...)
		MustAccept(t, s, sub, NewDelivery(sub, "email", "sales@example.com"))
		all = append(all, sub)
	}
	list := func(f outbox.SubmissionFilter) ([]uuid.UUID, string) {
		t.Helper()
		got, next, err := o.ListSubmissions(testCtx(t), f)
		if err != nil {
			t.Fatalf("list %+v: %v", f, err)
		}
		return subIDs(got), next
	}
	want := func(is ...int) []uuid.UUID {
		out := []uuid.UUID{}
		for _, i := range is {
			out = append(out, all[i].ID)
		}
		return out
	}
	cases := []struct {
		f    outbox.SubmissionFilter
		want []uuid.UUID
	}{
		{outbox.SubmissionFilter{}, want(4, 3, 2, 1, 0)},
		{outbox.SubmissionFilter{Form: "quote"}, want(3, 1)},
		{outbox.SubmissionFilter{Status: outbox.SubmissionQuarantined}, want(4)},
		{outbox.SubmissionFilter{Since: t0.Add(minutes(1)), Until: t0.Add(minutes(3))}, want(2, 1)},
		{outbox.SubmissionFilter{Form: "nope"}, want()},
	}
	for _, c := range cases {
		got, next := list(c.f)
		if len(got) == 0 {
			got = []uuid.UUID{}
		}
		if !reflect.DeepEqual(got, c.want) || next != "" {
			t.Errorf("list %+v = %v (next %q), want %v and no next page", c.f, got, next, c.want)
		}
	}

	// Pages of two walk every row exactly once, in order.
	var walked []uuid.UUID
	f := outbox.SubmissionFilter{Limit: 2}
	for page := 0; ; page++ {
		got, next := list(f)
		walked = append(walked, got...)
		if next == "" {
			break
		}
		if page > 5 {
			t.Fatalf("paging does not end")
		}
		f.Cursor = next
	}
	if !reflect.DeepEqual(walked, want(4, 3, 2, 1, 0)) {
		t.Errorf("paged walk = %v, want %v", walked, want(4, 3, 2, 1, 0))
	}
	if _, _, err := o.ListSubmissions(testCtx(t), outbox.SubmissionFilter{Cursor: "garbage"}); !errors.Is(err, outbox.ErrBadCursor) {
		t.Errorf("bad cursor: err = %v, want ErrBadCursor", err)
	}

	// Export sees the same rows (it pages internally).
	var exported []uuid.UUID
	if err := outbox.ExportSubmissions(testCtx(t), o, outbox.SubmissionFilter{Form: "contact"}, func(s *outbox.Submission) error {
		exported = append(exported, s.ID)
		return nil
	}); err != nil {
		t.Fatalf("export: %v", err)
	}
	if !reflect.DeepEqual(exported, want(4, 2, 0)) {
		t.Errorf("export = %v, want %v", exported, want(4, 2, 0))
	}
})

var _ = register("OpsListDeliveriesByStatus", func(t *testing.T, s outbox.Store) {
	o := outbox.Ops(s)
	first := acceptDue(t, s, t0)
	second := acceptDue(t, s, t0.Add(minutes(1)))
	pending := acceptDue(t, s, t0.Add(minutes(2)))
	for _, d := range claim(t, s, t0.Add(minutes(1)), 2) {
		complete(t, s, d, outbox.DeliveryDead, outbox.OutcomePermanent, t0.Add(minutes(1)), nil)
	}
	got, next, err := o.ListDeliveriesByStatus(testCtx(t), outbox.DeliveryFilter{Status: outbox.DeliveryDead, Limit: 1})
	if err != nil {
		t.Fatalf("list dead: %v", err)
	}
	if !reflect.DeepEqual(ids(got), []uuid.UUID{second.ID}) || next == "" {
		t.Fatalf("first page of dead = %v (next %q), want [%s] and a next page", ids(got), next, second.ID)
	}
	got, next, err = o.ListDeliveriesByStatus(testCtx(t), outbox.DeliveryFilter{Status: outbox.DeliveryDead, Limit: 1, Cursor: next})
	if err != nil || !reflect.DeepEqual(ids(got), []uuid.UUID{first.ID}) || next != "" {
		t.Fatalf("second page of dead = %v (next %q, err %v), want [%s] and no more", ids(got), next, err, first.ID)
	}
	if got[0].Status != outbox.DeliveryDead || got[0].LastError == "" {
		t.Errorf("listed delivery = %+v, want the stored dead row with its last error", got[0])
	}
	got, _, err = o.ListDeliveriesByStatus(testCtx(t), outbox.DeliveryFilter{Status: outbox.DeliveryPending})
	if err != nil || !reflect.DeepEqual(ids(got), []uuid.UUID{pending.ID}) {
		t.Fatalf("pending = %v (err %v), want [%s]", ids(got), err, pending.ID)
	}
})

var _ = register("OpsReleaseSubmissionMakesSkippedDeliveriesDue", func(t *testing.T, s outbox.Store) {
	o := outbox.Ops(s)
	sub := NewSubmission("contact", WithCreatedAt(t0), WithStatus(outbox.SubmissionQuarantined, outbox.ReasonOriginRejected))
	d1 := NewDelivery(sub, "email", "a@example.com")
	d2 := NewDelivery(sub, "email", "b@example.com")
	MustAccept(t, s, sub, d1, d2)
	if got := claim(t, s, t0.Add(time.Hour), 10); len(got) != 0 {
		t.Fatalf("claimed %d skipped deliveries before release", len(got))
	}
	now := t0.Add(time.Hour)
	if err := o.ReleaseSubmission(testCtx(t), sub.ID, now); err != nil {
		t.Fatalf("release: %v", err)
	}
	stored, err := s.GetSubmission(testCtx(t), sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != outbox.SubmissionAccepted || stored.Reason != "" {
		t.Errorf("released submission = %s/%q, want accepted with no reason", stored.Status, stored.Reason)
	}
	for _, id := range []uuid.UUID{d1.ID, d2.ID} {
		d := getDelivery(t, s, id)
		if d.Status != outbox.DeliveryPending || d.Attempts != 0 || !d.NextAttemptAt.Equal(now) {
			t.Errorf("released delivery = %s attempts %d due %v; want pending, 0, %v", d.Status, d.Attempts, d.NextAttemptAt, now)
		}
	}
	if got := claim(t, s, now, 10); len(got) != 2 {
		t.Errorf("claimed %d deliveries after release, want 2", len(got))
	}
	evs, err := s.ListEvents(testCtx(t), outbox.EventSubmissionReleased, 0)
	if err != nil || len(evs) != 1 || evs[0].SubmissionID != sub.ID {
		t.Fatalf("released events = %+v (err %v), want one for %s", evs, err, sub.ID)
	}
	var data map[string]string
	wantData := map[string]string{"form": "contact", "from_status": string(outbox.SubmissionQuarantined), "reason": outbox.ReasonOriginRejected}
	if err := json.Unmarshal(evs[0].Data, &data); err != nil || !reflect.DeepEqual(data, wantData) {
		t.Errorf("release event data = %s (err %v), want %v", evs[0].Data, err, wantData)
	}
	if err := o.ReleaseSubmission(testCtx(t), sub.ID, now); !errors.Is(err, outbox.ErrNotReleasable) {
		t.Errorf("second release: err = %v, want ErrNotReleasable", err)
	}
	if err := o.ReleaseSubmission(testCtx(t), uuid.Must(uuid.NewV7()), now); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("release of unknown id: err = %v, want ErrNotFound", err)
	}
})

var _ = register("OpsDeleteSubmissionErasesRowsAndRecordsNoData", func(t *testing.T, s outbox.Store) {
	o := outbox.Ops(s)
	keep := acceptDue(t, s, t0)
	sub := NewSubmission("contact", WithCreatedAt(t0.Add(time.Second)))
	d := NewDelivery(sub, "email", "sales@example.com")
	MustAccept(t, s, sub, d)
	for _, c := range claim(t, s, t0.Add(time.Minute), 10) {
		complete(t, s, c, outbox.DeliveryFailed, outbox.OutcomeTemporary, t0.Add(time.Minute), nil)
	}
	if err := o.DeleteSubmission(testCtx(t), sub.ID, t0.Add(time.Hour)); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := s.GetSubmission(testCtx(t), sub.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("submission after delete: err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetDelivery(testCtx(t), d.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("delivery after delete: err = %v, want ErrNotFound", err)
	}
	if as, err := s.ListAttempts(testCtx(t), d.ID); err != nil || len(as) != 0 {
		t.Errorf("attempts after delete = %d (err %v), want none", len(as), err)
	}
	if got := getDelivery(t, s, keep.ID); got.SubmissionID != keep.SubmissionID {
		t.Errorf("another submission's delivery was touched")
	}
	evs, err := s.ListEvents(testCtx(t), outbox.EventSubmissionErased, 0)
	if err != nil || len(evs) != 1 || evs[0].SubmissionID != sub.ID {
		t.Fatalf("erased events = %+v (err %v), want one for %s", evs, err, sub.ID)
	}
	var data map[string]any
	if err := json.Unmarshal(evs[0].Data, &data); err != nil || !reflect.DeepEqual(data, map[string]any{"form": "contact"}) {
		t.Errorf("erasure event data = %s, want only the form", evs[0].Data)
	}
	if err := o.DeleteSubmission(testCtx(t), sub.ID, t0.Add(time.Hour)); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("second delete: err = %v, want ErrNotFound", err)
	}
})

var _ = register("OpsStatsCountsLiveWork", func(t *testing.T, s outbox.Store) {
	o := outbox.Ops(s)
	st, err := o.Stats(testCtx(t), t0)
	if err != nil || st != (outbox.Stats{}) {
		t.Fatalf("stats of an empty store = %+v (err %v), want zeros", st, err)
	}
	acceptDue(t, s, t0)                                    // to be dead
	acceptDue(t, s, t0.Add(minutes(1)))                    // to be leased
	for _, d := range claim(t, s, t0.Add(minutes(1)), 1) { // dead, the oldest
		complete(t, s, d, outbox.DeliveryDead, outbox.OutcomePermanent, t0.Add(minutes(1)), nil)
	}
	claim(t, s, t0.Add(minutes(1)), 1)   // sending, leased
	acceptDue(t, s, t0.Add(minutes(2)))  // due
	acceptDue(t, s, t0.Add(minutes(20))) // not due yet

	now := t0.Add(minutes(5))
	st, err = o.Stats(testCtx(t), now)
	if err != nil {
		t.Fatal(err)
	}
	want := outbox.Stats{Backlog: 3, Due: 1, OldestDueAt: t0.Add(minutes(2)), Dead: 1}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	if age := st.OldestDueAge(now); age != minutes(3) {
		t.Errorf("oldest due age = %v, want 3m", age)
	}
})

var _ = register("OpsPruneDeletesExactlyExpiredTerminalSubmissions", func(t *testing.T, s outbox.Store) {
	o := outbox.Ops(s)
	day := 24 * time.Hour
	// settle accepts one submission created at `at` with one delivery, claims it at `at`
	// and records status (empty: left pending). Each claim takes exactly this delivery:
	// everything stored before it is terminal, leased or due later.
	settle := func(at time.Time, status outbox.DeliveryStatus, opts ...SubmissionOption) *outbox.Submission {
		t.Helper()
		sub := NewSubmission("contact", append([]SubmissionOption{WithCreatedAt(at)}, opts...)...)
		MustAccept(t, s, sub, NewDelivery(sub, "email", "sales@example.com"))
		if status == "" || sub.Status != outbox.SubmissionAccepted {
			return sub
		}
		got := claim(t, s, at, 1)
		if len(got) != 1 || got[0].SubmissionID != sub.ID {
			t.Fatalf("setup: claimed %v, want the delivery of %s", ids(got), sub.ID)
		}
		switch status {
		case outbox.DeliverySent:
			complete(t, s, got[0], outbox.DeliverySent, outbox.OutcomeSent, at, nil)
		case outbox.DeliveryDead:
			complete(t, s, got[0], outbox.DeliveryDead, outbox.OutcomePermanent, at, nil)
		case outbox.DeliveryFailed:
			complete(t, s, got[0], outbox.DeliveryFailed, outbox.OutcomeTemporary, at, nil)
		}
		return sub
	}
	cutoff := t0
	sentOld := settle(cutoff.Add(-10*day), outbox.DeliverySent)
	spamOld := settle(cutoff.Add(-9*day), "", WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
	deadOld := settle(cutoff.Add(-8*day), outbox.DeliveryDead)
	sentYoung := settle(cutoff.Add(time.Minute), outbox.DeliverySent)
	leasedOld := settle(cutoff.Add(-5*day), outbox.DeliverySending)
	failedOld := settle(cutoff.Add(-6*day), outbox.DeliveryFailed)
	// Half sent, half still due: the submission must stay.
	mixed := NewSubmission("contact", WithCreatedAt(cutoff.Add(-7*day)))
	MustAccept(t, s, mixed, NewDelivery(mixed, "email", "a@example.com"), NewDelivery(mixed, "email", "b@example.com"))
	got := claim(t, s, cutoff.Add(-7*day), 1)
	if len(got) != 1 || got[0].SubmissionID != mixed.ID {
		t.Fatalf("setup: claimed %v, want one delivery of %s", ids(got), mixed.ID)
	}
	complete(t, s, got[0], outbox.DeliverySent, outbox.OutcomeSent, cutoff.Add(-7*day), nil)

	total := 0
	for i := 0; ; i++ {
		res, err := o.Prune(testCtx(t), cutoff, 2)
		if err != nil {
			t.Fatalf("prune: %v", err)
		}
		if res.Submissions > 2 || res.Events > 2 {
			t.Fatalf("prune batch deleted %+v, more than the batch of 2", res)
		}
		total += res.Submissions
		if res.Submissions < 2 {
			break
		}
		if i > 10 {
			t.Fatalf("prune does not end")
		}
	}
	if total != 3 {
		t.Errorf("pruned %d submissions, want 3", total)
	}
	for _, sub := range []*outbox.Submission{sentOld, spamOld, deadOld} {
		if _, err := s.GetSubmission(testCtx(t), sub.ID); !errors.Is(err, outbox.ErrNotFound) {
			t.Errorf("expired terminal submission %s survived (err %v)", sub.ID, err)
		}
	}
	for name, sub := range map[string]*outbox.Submission{"young": sentYoung, "leased": leasedOld, "failed": failedOld, "mixed": mixed} {
		if _, err := s.GetSubmission(testCtx(t), sub.ID); err != nil {
			t.Errorf("%s submission was pruned: %v", name, err)
		}
	}
	wantStatus := map[uuid.UUID][]outbox.DeliveryStatus{
		leasedOld.ID: {outbox.DeliverySending},
		failedOld.ID: {outbox.DeliveryFailed},
		mixed.ID:     {outbox.DeliverySent, outbox.DeliveryPending},
	}
	for id, want := range wantStatus {
		ds, err := s.ListDeliveries(testCtx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		var got []outbox.DeliveryStatus
		for _, d := range ds {
			got = append(got, d.Status)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("deliveries of %s = %v, want %v", id, got, want)
		}
	}
	// Events older than the cutoff go too, oldest first; young ones stay.
	evs, err := s.ListEvents(testCtx(t), outbox.EventSubmissionReceived, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uuid.UUID]bool{}
	for _, e := range evs {
		seen[e.SubmissionID] = true
	}
	if seen[sentOld.ID] || !seen[sentYoung.ID] {
		t.Errorf("after prune: old event kept %v, young event kept %v; want false, true", seen[sentOld.ID], seen[sentYoung.ID])
	}
})

var _ = register("OpsLockPrunerIsExclusive", func(t *testing.T, s outbox.Store) {
	o := outbox.Ops(s)
	unlock, ok, err := o.LockPruner(testCtx(t))
	if err != nil || !ok {
		t.Fatalf("first lock: ok %v err %v", ok, err)
	}
	if _, ok, err := o.LockPruner(testCtx(t)); err != nil || ok {
		t.Fatalf("second lock while held: ok %v err %v, want not ok", ok, err)
	}
	unlock()
	unlock2, ok, err := o.LockPruner(testCtx(t))
	if err != nil || !ok {
		t.Fatalf("lock after unlock: ok %v err %v", ok, err)
	}
	unlock2()
})

// The attempts of a delivery go with it, whichever path deletes it: retention, erasure,
// and an erasure while the delivery is leased, after which the worker's completion
// records nothing. PostgreSQL has no foreign key from attempts to deliveries
// (pgstore/migrations/0008), so this is what proves its explicit deletes.
var _ = register("OpsPruneAndEraseLeaveNoAttempts", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	day := 24 * time.Hour
	noAttempts := func(what string, d outbox.Delivery) {
		t.Helper()
		if _, err := s.GetDelivery(ctx, d.ID); !errors.Is(err, outbox.ErrNotFound) {
			t.Errorf("%s: delivery still stored (err %v)", what, err)
		}
		if as, err := s.ListAttempts(ctx, d.ID); err != nil || len(as) != 0 {
			t.Errorf("%s: attempts left = %v, %v; want none", what, as, err)
		}
	}
	// accept stores one submission created at `at` with one delivery and claims it.
	accept := func(at time.Time) outbox.Delivery {
		t.Helper()
		sub := NewSubmission("contact", WithCreatedAt(at))
		MustAccept(t, s, sub, NewDelivery(sub, "email", "sales@example.com"))
		got := claim(t, s, at, 1)
		if len(got) != 1 || got[0].SubmissionID != sub.ID {
			t.Fatalf("setup: claimed %v, want the delivery of %s", ids(got), sub.ID)
		}
		return got[0]
	}
	sent := accept(t0.Add(-10 * day))
	complete(t, s, sent, outbox.DeliverySent, outbox.OutcomeSent, t0.Add(-10*day), nil)
	dead := accept(t0.Add(-9 * day))
	complete(t, s, dead, outbox.DeliveryDead, outbox.OutcomePermanent, t0.Add(-9*day), nil)
	for _, d := range []outbox.Delivery{sent, dead} {
		if as, err := s.ListAttempts(ctx, d.ID); err != nil || len(as) != 1 {
			t.Fatalf("setup: attempts of %s = %v, %v; want 1", d.ID, as, err)
		}
	}
	res, err := outbox.Ops(s).Prune(ctx, t0, 10)
	if err != nil || res.Submissions != 2 {
		t.Fatalf("prune = %+v, %v; want 2 submissions", res, err)
	}
	noAttempts("pruned sent", sent)
	noAttempts("pruned dead", dead)

	erased := accept(t0)
	complete(t, s, erased, outbox.DeliverySent, outbox.OutcomeSent, t0, nil)
	leased := accept(t0.Add(time.Minute))
	ib := outbox.Inbox(s)
	for _, d := range []outbox.Delivery{erased, leased} {
		if err := ib.Act(ctx, outbox.Action{Kind: outbox.ActionErase, SubmissionID: d.SubmissionID, User: "ops", Now: t0.Add(2 * time.Minute)}); err != nil {
			t.Fatalf("erase %s: %v", d.SubmissionID, err)
		}
	}
	err = outbox.CompleteOne(ctx, s, completion(leased, outbox.DeliverySent, outbox.OutcomeSent, t0.Add(3*time.Minute), nil))
	if !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("completion of an erased delivery: err = %v, want ErrLeaseLost", err)
	}
	noAttempts("erased", erased)
	noAttempts("erased while leased", leased)
})
