package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// makeDead claims the due delivery d at its due time and records a permanent failure.
func makeDead(t testing.TB, s outbox.Store, d outbox.Delivery) {
	t.Helper()
	for _, c := range claim(t, s, d.NextAttemptAt, 10) {
		if c.ID == d.ID {
			complete(t, s, c, outbox.DeliveryDead, outbox.OutcomePermanent, d.NextAttemptAt, nil)
			return
		}
		if err := s.Release(testCtx(t), c.ID, c.LeaseToken, d.NextAttemptAt); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	t.Fatalf("delivery %s was not due", d.ID)
}

var _ = register("InboxSearchFiltersAndPagesNewestFirst", func(t *testing.T, s outbox.Store) {
	ib := outbox.Inbox(s)
	mk := func(i int, form string, opts ...SubmissionOption) (*outbox.Submission, outbox.Delivery) {
		sub := NewSubmission(form, append([]SubmissionOption{WithCreatedAt(t0.Add(minutes(i)))}, opts...)...)
		d := NewDelivery(sub, "email", "sales@example.com")
		MustAccept(t, s, sub, d)
		return sub, d
	}
	s0, _ := mk(0, "contact", WithFields("name", "Grace Hopper", "message", "Compilers, 100% done_ok"))
	s1, d1 := mk(1, "support", WithFields("name", "Ada", "message", "<img src=x onerror=alert(1)>"))
	s2, _ := mk(2, "contact", WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation))
	s3, _ := mk(3, "quote", WithFields("company", "GRACE Ltd"))
	// s0's delivery is sent, s1's dead, s3's still pending.
	for _, c := range claim(t, s, t0.Add(minutes(0)), 10) {
		complete(t, s, c, outbox.DeliverySent, outbox.OutcomeSent, t0, nil)
	}
	makeDead(t, s, d1)

	search := func(f outbox.InboxFilter) ([]uuid.UUID, string) {
		t.Helper()
		got, next, err := ib.SearchSubmissions(testCtx(t), f)
		if err != nil {
			t.Fatalf("search %+v: %v", f, err)
		}
		out := subIDs(got)
		if out == nil {
			out = []uuid.UUID{}
		}
		return out, next
	}
	ids := func(subs ...*outbox.Submission) []uuid.UUID {
		out := []uuid.UUID{}
		for _, s := range subs {
			out = append(out, s.ID)
		}
		return out
	}
	cases := []struct {
		name string
		f    outbox.InboxFilter
		want []uuid.UUID
	}{
		{"all", outbox.InboxFilter{}, ids(s3, s2, s1, s0)},
		{"forms", outbox.InboxFilter{Forms: []string{"contact", "quote"}}, ids(s3, s2, s0)},
		{"status", outbox.InboxFilter{Status: outbox.SubmissionQuarantined}, ids(s2)},
		{"dead", outbox.InboxFilter{Delivery: outbox.DeliveryStateDead}, ids(s1)},
		// s2's delivery is skipped (quarantined), s0's sent: neither is pending.
		{"pending", outbox.InboxFilter{Delivery: outbox.DeliveryStatePending}, ids(s3)},
		{"dates", outbox.InboxFilter{Since: t0.Add(minutes(1)), Until: t0.Add(minutes(3))}, ids(s2, s1)},
		{"search ignores ASCII case", outbox.InboxFilter{Search: "grace"}, ids(s3, s0)},
		{"search finds markup as typed", outbox.InboxFilter{Search: "<img src=x"}, ids(s1)},
		{"search treats % and _ literally", outbox.InboxFilter{Search: "100% done_"}, ids(s0)},
		{"search misses", outbox.InboxFilter{Search: "100%_done"}, ids()},
		{"search reads values, not names", outbox.InboxFilter{Search: "company"}, ids()},
		{"combined", outbox.InboxFilter{Forms: []string{"contact"}, Search: "grace", Status: outbox.SubmissionAccepted}, ids(s0)},
	}
	for _, c := range cases {
		got, next := search(c.f)
		if !reflect.DeepEqual(got, c.want) || next != "" {
			t.Errorf("%s: got %v next %q, want %v and no next page", c.name, got, next, c.want)
		}
	}
	// Keyset pages of two, then the rest.
	got, next := search(outbox.InboxFilter{Limit: 2})
	if !reflect.DeepEqual(got, ids(s3, s2)) || next == "" {
		t.Fatalf("page 1 = %v next %q", got, next)
	}
	got, next = search(outbox.InboxFilter{Limit: 2, Cursor: next})
	if !reflect.DeepEqual(got, ids(s1, s0)) || next != "" {
		t.Fatalf("page 2 = %v next %q", got, next)
	}
	if _, _, err := ib.SearchSubmissions(testCtx(t), outbox.InboxFilter{Cursor: "nope"}); !errors.Is(err, outbox.ErrBadCursor) {
		t.Errorf("bad cursor: err = %v, want ErrBadCursor", err)
	}
})

var _ = register("InboxOverviewCountsPerFormAndStatus", func(t *testing.T, s outbox.Store) {
	ib := outbox.Inbox(s)
	day, week := t0.Add(-minutes(60)), t0.Add(-minutes(60*24*7))
	accept := func(form string, at int, opts ...SubmissionOption) outbox.Delivery {
		sub := NewSubmission(form, append([]SubmissionOption{WithCreatedAt(t0.Add(minutes(at)))}, opts...)...)
		d := NewDelivery(sub, "email", "sales@example.com")
		MustAccept(t, s, sub, d)
		return d
	}
	accept("contact", 0)
	accept("contact", -120)      // this week, not today
	accept("contact", -60*24*30) // older than a week
	accept("contact", 0, WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
	accept("contact", 0, func(s *outbox.Submission) { s.Test = true })
	dead := accept("quote", -60*24*30)
	makeDead(t, s, dead)

	ov, err := ib.Overview(testCtx(t), nil, day, week)
	if err != nil {
		t.Fatalf("overview: %v", err)
	}
	wantSubs := []outbox.FormCount{
		{Form: "contact", Status: outbox.SubmissionAccepted, Today: 1, Week: 2, All: 3},
		{Form: "contact", Status: outbox.SubmissionAccepted, Test: true, Today: 1, Week: 1, All: 1},
		{Form: "contact", Status: outbox.SubmissionSpam, Today: 1, Week: 1, All: 1},
		{Form: "quote", Status: outbox.SubmissionAccepted, All: 1},
	}
	if !reflect.DeepEqual(ov.Submissions, wantSubs) {
		t.Errorf("submissions = %+v\nwant %+v", ov.Submissions, wantSubs)
	}
	wantDels := []outbox.FormDeliveries{
		{Form: "contact", Status: outbox.DeliveryPending, Count: 4},
		{Form: "quote", Status: outbox.DeliveryDead, Count: 1},
	}
	if !reflect.DeepEqual(ov.Deliveries, wantDels) {
		t.Errorf("deliveries = %+v\nwant %+v", ov.Deliveries, wantDels)
	}
	ov, err = ib.Overview(testCtx(t), []string{"quote"}, day, week)
	if err != nil {
		t.Fatalf("overview of quote: %v", err)
	}
	if len(ov.Submissions) != 1 || ov.Submissions[0].Form != "quote" || len(ov.Deliveries) != 1 {
		t.Errorf("overview of quote = %+v", ov)
	}
})

// actionUser reads the user named by the last event of kind about submission id.
func actionUser(t testing.TB, ib outbox.Inbox, id uuid.UUID, kind string) string {
	t.Helper()
	evs, err := ib.SubmissionEvents(testCtx(t), id)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == kind {
			var data struct{ User string }
			if err := json.Unmarshal(evs[i].Data, &data); err != nil {
				t.Fatalf("event data %s: %v", evs[i].Data, err)
			}
			return data.User
		}
	}
	t.Fatalf("no %s event about %s in %+v", kind, id, evs)
	return ""
}

var _ = register("InboxActionsChangeRowsAndNameTheUser", func(t *testing.T, s outbox.Store) {
	ib := outbox.Inbox(s)
	act := func(a outbox.Action) error {
		a.User, a.Now = "ops", t0.Add(minutes(30))
		return ib.Act(testCtx(t), a)
	}

	// Retry a dead delivery.
	d := acceptDue(t, s, t0)
	makeDead(t, s, d)
	if err := act(outbox.Action{Kind: outbox.ActionRetry, DeliveryID: d.ID}); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got := getDelivery(t, s, d.ID); got.Status != outbox.DeliveryPending || got.Attempts != 0 || !got.NextAttemptAt.Equal(t0.Add(minutes(30))) {
		t.Errorf("after retry: %+v", got)
	}
	if u := actionUser(t, ib, d.SubmissionID, outbox.EventDeliveryRetried); u != "ops" {
		t.Errorf("retry event user = %q", u)
	}
	if err := act(outbox.Action{Kind: outbox.ActionRetry, DeliveryID: d.ID}); !errors.Is(err, outbox.ErrNotRetryable) {
		t.Errorf("retry of a pending delivery: err = %v, want ErrNotRetryable", err)
	}

	// Mark an accepted one as spam: its unsent delivery is skipped; then release it.
	sub := NewSubmission("contact", WithCreatedAt(t0))
	sd := NewDelivery(sub, "email", "sales@example.com")
	MustAccept(t, s, sub, sd)
	if err := act(outbox.Action{Kind: outbox.ActionMarkSpam, SubmissionID: sub.ID}); err != nil {
		t.Fatalf("mark spam: %v", err)
	}
	got, err := s.GetSubmission(testCtx(t), sub.ID)
	if err != nil || got.Status != outbox.SubmissionSpam || got.Reason != outbox.ReasonOperator {
		t.Fatalf("after mark spam: %+v, %v", got, err)
	}
	if st := getDelivery(t, s, sd.ID).Status; st != outbox.DeliverySkipped {
		t.Errorf("delivery after mark spam = %s, want skipped", st)
	}
	if u := actionUser(t, ib, sub.ID, outbox.EventSubmissionMarkedSpam); u != "ops" {
		t.Errorf("spam event user = %q", u)
	}
	if err := act(outbox.Action{Kind: outbox.ActionMarkSpam, SubmissionID: sub.ID}); !errors.Is(err, outbox.ErrNotSpammable) {
		t.Errorf("mark spam twice: err = %v, want ErrNotSpammable", err)
	}
	if err := act(outbox.Action{Kind: outbox.ActionRelease, SubmissionID: sub.ID}); err != nil {
		t.Fatalf("release: %v", err)
	}
	if st := getDelivery(t, s, sd.ID).Status; st != outbox.DeliveryPending {
		t.Errorf("delivery after release = %s, want pending", st)
	}
	if u := actionUser(t, ib, sub.ID, outbox.EventSubmissionReleased); u != "ops" {
		t.Errorf("release event user = %q", u)
	}

	// Erase: the rows go, the event names the user and holds no field value.
	if err := act(outbox.Action{Kind: outbox.ActionErase, SubmissionID: sub.ID}); err != nil {
		t.Fatalf("erase: %v", err)
	}
	if _, err := s.GetSubmission(testCtx(t), sub.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("after erase: err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetDelivery(testCtx(t), sd.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("delivery after erase: err = %v, want ErrNotFound", err)
	}
	if u := actionUser(t, ib, sub.ID, outbox.EventSubmissionErased); u != "ops" {
		t.Errorf("erase event user = %q", u)
	}
	if err := act(outbox.Action{Kind: outbox.ActionErase, SubmissionID: sub.ID}); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("erase twice: err = %v, want ErrNotFound", err)
	}
	if err := act(outbox.Action{Kind: outbox.ActionRetry, DeliveryID: uuid.New()}); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("retry of an unknown delivery: err = %v, want ErrNotFound", err)
	}
})

// Taking an address off the suppression list from the inbox removes it and records who
// did it, in one transaction: on the submission whose delivery listed the address, and
// in the event log for an address listed by hand.
var _ = register("InboxUnsuppressRemovesAndNamesTheUser", func(t *testing.T, s outbox.Store) {
	ib, fs, ctx := outbox.Inbox(s), outbox.FeedbackStore(s), testCtx(t)
	sub := NewSubmission("contact")
	d := NewDelivery(sub, "email", "bounce@example.com")
	MustAccept(t, s, sub, d)
	for _, sp := range []outbox.Suppression{
		{Address: "bounce@example.com", Reason: "bounce", DeliveryID: d.ID, CreatedAt: t0},
		{Address: "manual@example.com", Reason: "manual", CreatedAt: t0},
	} {
		if err := fs.AddSuppression(ctx, sp); err != nil {
			t.Fatalf("add %s: %v", sp.Address, err)
		}
	}
	unsuppress := func(addr string) error {
		return ib.Act(ctx, outbox.Action{Kind: outbox.ActionUnsuppress, Address: addr, User: "ops", Now: t0.Add(minutes(5))})
	}
	for _, addr := range []string{" Bounce@Example.com ", "manual@example.com"} {
		if err := unsuppress(addr); err != nil {
			t.Fatalf("unsuppress %q: %v", addr, err)
		}
		if ok, err := fs.IsSuppressed(ctx, addr); ok || err != nil {
			t.Errorf("%q still suppressed (%v)", addr, err)
		}
	}
	if err := unsuppress("manual@example.com"); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("unsuppress twice: %v, want ErrNotFound", err)
	}

	if got := actionUser(t, ib, sub.ID, outbox.EventSuppressionRemoved); got != "ops" {
		t.Errorf("the submission's removal event names %q, want ops", got)
	}
	evs, err := s.ListEvents(ctx, outbox.EventSuppressionRemoved, 10)
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	got := map[string]string{}
	for _, e := range evs {
		var data struct{ User, Address, Reason, Form string }
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatalf("event data %s: %v", e.Data, err)
		}
		got[data.Address] = fmt.Sprintf("%s %s %s %s %s", data.User, data.Reason, data.Form, e.SubmissionID, e.DeliveryID)
	}
	want := map[string]string{
		"bounce@example.com": fmt.Sprintf("ops bounce contact %s %s", sub.ID, d.ID),
		"manual@example.com": fmt.Sprintf("ops manual  %s %s", uuid.Nil, uuid.Nil),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("suppression.removed events = %v\nwant %v", got, want)
	}
})

var _ = register("InboxSubmissionFormsListsEachFormOnce", func(t *testing.T, s outbox.Store) {
	ib := outbox.Inbox(s)
	forms := func() []string {
		t.Helper()
		got, err := ib.SubmissionForms(testCtx(t))
		if err != nil {
			t.Fatalf("submission forms: %v", err)
		}
		return got
	}
	if got := forms(); len(got) != 0 {
		t.Fatalf("empty store: forms = %v, want none", got)
	}
	for i, form := range []string{"quote", "contact", "newsletter", "contact", "quote", "a-b"} {
		sub := NewSubmission(form, WithCreatedAt(t0.Add(minutes(i))))
		MustAccept(t, s, sub, NewDelivery(sub, "email", "sales@example.com"))
	}
	quarantined := NewSubmission("zeta", WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation))
	MustAccept(t, s, quarantined, NewDelivery(quarantined, "email", "sales@example.com"))
	if got, want := forms(), []string{"a-b", "contact", "newsletter", "quote", "zeta"}; !reflect.DeepEqual(got, want) {
		t.Errorf("forms = %v, want %v", got, want)
	}
})
