package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// alertNotice builds a notice of (kind, key) at now carried by one e-mail delivery to
// owner@example.com, as the evaluator (outbox/alert) would.
func alertNotice(notice string, a outbox.Alert, now time.Time) outbox.AlertNotice {
	sub := &outbox.Submission{ID: uuid.Must(uuid.NewV7()), CreatedAt: now,
		Data: outbox.Fields{{Name: "kind", Value: a.Kind}, {Name: "notice", Value: notice}}}
	p := outbox.Payload{To: "owner@example.com", Subject: "Alert " + notice, Text: a.Summary}
	del := outbox.Delivery{ID: uuid.Must(uuid.NewV7()), Route: "alert:email", Channel: outbox.ChannelEmail,
		Recipient: "owner@example.com", MaxAttempts: 8, Payload: p.AppendJSON(nil)}
	return outbox.AlertNotice{Notice: notice, Alert: a, Now: now, Submission: sub, Deliveries: []outbox.Delivery{del}}
}

func newAlert(kind, key string, now time.Time) outbox.Alert {
	return outbox.Alert{ID: uuid.Must(uuid.NewV7()), Kind: kind, Key: key, Form: "contact",
		Summary: "2 deliveries of contact/hook are dead", Affected: 2, Channel: "webhook", OpenedAt: now}
}

func recordAlert(t testing.TB, s outbox.Store, n outbox.AlertNotice) bool {
	t.Helper()
	ok, err := s.RecordAlert(testCtx(t), n)
	if err != nil {
		t.Fatalf("record alert %s: %v", n.Notice, err)
	}
	return ok
}

func openAlerts(t testing.TB, s outbox.Store) []outbox.Alert {
	t.Helper()
	got, err := s.ListAlerts(testCtx(t), 0)
	if err != nil {
		t.Fatalf("list alerts: %v", err)
	}
	return got
}

// noDelivery fails t if the notice's delivery was written.
func noDelivery(t testing.TB, s outbox.Store, n outbox.AlertNotice) {
	t.Helper()
	if _, err := s.GetDelivery(testCtx(t), n.Deliveries[0].ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("delivery of a refused %s notice: err = %v, want not found", n.Notice, err)
	}
	if _, err := s.GetSubmission(testCtx(t), n.Submission.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("submission of a refused %s notice: err = %v, want not found", n.Notice, err)
	}
}

var _ = register("AlertOpensOncePerKindAndKeyWithItsDeliveries", func(t *testing.T, s outbox.Store) {
	a := newAlert(outbox.AlertDeliveryDead, "contact/hook", t0)
	first := alertNotice(outbox.AlertOpened, a, t0)
	if !recordAlert(t, s, first) {
		t.Fatal("opening a fresh alert = false")
	}
	sub, err := s.GetSubmission(testCtx(t), first.Submission.ID)
	if err != nil {
		t.Fatalf("alert submission: %v", err)
	}
	if sub.Form != outbox.AlertsForm || !sub.Test || sub.Status != outbox.SubmissionAccepted {
		t.Errorf("alert submission = form %q test %v status %s, want %s, test, accepted", sub.Form, sub.Test, sub.Status, outbox.AlertsForm)
	}
	del := getDelivery(t, s, first.Deliveries[0].ID)
	if del.SubmissionID != sub.ID || del.Status != outbox.DeliveryPending || !del.NextAttemptAt.Equal(t0) {
		t.Errorf("alert delivery = %+v, want pending on %s, due %s", del, sub.ID, t0)
	}

	again := alertNotice(outbox.AlertOpened, newAlert(outbox.AlertDeliveryDead, "contact/hook", t0.Add(time.Minute)), t0.Add(time.Minute))
	if recordAlert(t, s, again) {
		t.Error("a second open alert of one (kind, key) was written")
	}
	noDelivery(t, s, again)
	other := alertNotice(outbox.AlertOpened, newAlert(outbox.AlertDeliveryDead, "contact/mail", t0), t0)
	if !recordAlert(t, s, other) {
		t.Error("an alert of another key was refused")
	}
	got := openAlerts(t, s)
	if len(got) != 2 || got[0].ID != a.ID || got[0].Notices != 1 || got[0].Affected != 2 || got[0].Channel != "webhook" ||
		!got[0].OpenedAt.Equal(t0) || !got[0].NotifiedAt.Equal(t0) || !got[0].ResolvedAt.IsZero() {
		t.Errorf("open alerts = %+v, want %s (1 notice, 2 affected, opened %s) and contact/mail", got, a.ID, t0)
	}
	evs, err := s.ListEvents(testCtx(t), outbox.EventAlertOpened, 10)
	if err != nil || len(evs) != 2 || evs[1].SubmissionID != sub.ID {
		t.Errorf("alert.opened events = %+v (%v), want 2, the first (listed last) about %s", evs, err, sub.ID)
	}
})

var _ = register("AlertStillHappeningOncePerWindow", func(t *testing.T, s outbox.Store) {
	a := newAlert(outbox.AlertDeliveryDead, "contact/hook", t0)
	recordAlert(t, s, alertNotice(outbox.AlertOpened, a, t0))
	window := time.Hour

	early := a
	early.Affected = 3
	n := alertNotice(outbox.AlertStill, early, t0.Add(30*time.Minute))
	n.NotifiedBefore = n.Now.Add(-window)
	if recordAlert(t, s, n) {
		t.Error("a still-happening notice inside the window was written")
	}
	noDelivery(t, s, n)

	seen := a
	seen.Affected, seen.Summary = 4, "4 deliveries of contact/hook are dead"
	if !recordAlert(t, s, outbox.AlertNotice{Notice: outbox.AlertRefreshed, Alert: seen, Now: t0.Add(40 * time.Minute)}) {
		t.Error("refreshing an open alert's count = false")
	}
	if got := openAlerts(t, s); len(got) != 1 || got[0].Affected != 4 || got[0].Summary != seen.Summary || got[0].Notices != 1 ||
		!got[0].NotifiedAt.Equal(t0) {
		t.Errorf("after a refresh = %+v, want 4 affected, still 1 notice at %s", got, t0)
	}

	later := a
	later.Affected, later.Summary = 5, "5 deliveries of contact/hook are dead"
	n = alertNotice(outbox.AlertStill, later, t0.Add(window))
	n.NotifiedBefore = n.Now.Add(-window)
	if !recordAlert(t, s, n) {
		t.Fatal("the still-happening notice one window later was refused")
	}
	getDelivery(t, s, n.Deliveries[0].ID)
	twin := alertNotice(outbox.AlertStill, later, t0.Add(window+time.Second))
	twin.NotifiedBefore = n.NotifiedBefore // decided on the same read by another instance
	if recordAlert(t, s, twin) {
		t.Error("two still-happening notices for one window")
	}
	got := openAlerts(t, s)
	if len(got) != 1 || got[0].Notices != 2 || got[0].Affected != 5 || got[0].Summary != later.Summary || !got[0].NotifiedAt.Equal(t0.Add(window)) {
		t.Errorf("open alert = %+v, want 2 notices, 5 affected, notified at %s", got, t0.Add(window))
	}
})

var _ = register("AlertResolvesOnceThenReopensAsANewAlert", func(t *testing.T, s outbox.Store) {
	a := newAlert(outbox.AlertSpoolBacklog, "instance-a", t0)
	recordAlert(t, s, alertNotice(outbox.AlertOpened, a, t0))
	res := alertNotice(outbox.AlertResolved, a, t0.Add(time.Hour))
	if !recordAlert(t, s, res) {
		t.Fatal("resolving an open alert = false")
	}
	twin := alertNotice(outbox.AlertResolved, a, t0.Add(time.Hour))
	if recordAlert(t, s, twin) {
		t.Error("an alert resolved twice")
	}
	noDelivery(t, s, twin)
	if got := openAlerts(t, s); len(got) != 0 {
		t.Errorf("open alerts after resolving = %+v", got)
	}
	all, err := s.ListAlerts(testCtx(t), 5)
	if err != nil || len(all) != 1 || all[0].ID != a.ID || !all[0].ResolvedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("alerts with resolved = %+v (%v), want %s resolved at %s", all, err, a.ID, t0.Add(time.Hour))
	}
	// Without deliveries (no target could take it), the state is still recorded.
	b := newAlert(outbox.AlertSpoolBacklog, "instance-a", t0.Add(2*time.Hour))
	if !recordAlert(t, s, outbox.AlertNotice{Notice: outbox.AlertOpened, Alert: b, Now: b.OpenedAt}) {
		t.Fatal("reopening after resolution = false")
	}
	if got := openAlerts(t, s); len(got) != 1 || got[0].ID != b.ID {
		t.Errorf("open alerts = %+v, want the new %s", got, b.ID)
	}
})

var _ = register("AlertOpenRaceWritesOneNotice", func(t *testing.T, s outbox.Store) {
	const racers = 8
	var (
		wg  sync.WaitGroup
		won = make([]bool, racers)
		ns  = make([]outbox.AlertNotice, racers)
	)
	for i := range racers {
		ns[i] = alertNotice(outbox.AlertOpened, newAlert(outbox.AlertDeliveryDead, "contact/hook", t0), t0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.RecordAlert(testCtx(t), ns[i])
			if err != nil {
				t.Errorf("racer %d: %v", i, err)
			}
			won[i] = ok
		}()
	}
	wg.Wait()
	winners := 0
	for i, ok := range won {
		if ok {
			winners++
			getDelivery(t, s, ns[i].Deliveries[0].ID)
		} else {
			noDelivery(t, s, ns[i])
		}
	}
	if winners != 1 || len(openAlerts(t, s)) != 1 {
		t.Errorf("%d racers opened the alert, %d open; want exactly 1", winners, len(openAlerts(t, s)))
	}
})

var _ = register("DeadDeliveryGroupsCountSubmissionsPerRouteExceptAlertsAndTests", func(t *testing.T, s outbox.Store) {
	var dead []outbox.Delivery
	for i := range 3 {
		sub := NewSubmission("contact", WithCreatedAt(t0.Add(minutes(i))))
		hook := NewDelivery(sub, "hook", "https://hooks.example.com/x")
		mail := NewDelivery(sub, "email", "sales@example.com")
		MustAccept(t, s, sub, hook, mail)
		if i < 2 {
			dead = append(dead, hook)
		}
	}
	// A test submission's dead delivery (a `_test` post, a canary) is no lead's. It is
	// due first, so it goes dead first.
	test := NewSubmission("contact", WithCreatedAt(t0.Add(-time.Hour)))
	test.Test = true
	testHook := NewDelivery(test, "hook", "https://hooks.example.com/x")
	MustAccept(t, s, test, testHook)
	dead = append([]outbox.Delivery{testHook}, dead...)
	for _, d := range dead {
		makeDead(t, s, d)
	}
	n := alertNotice(outbox.AlertOpened, newAlert(outbox.AlertDeliveryDead, "contact/hook", t0), t0.Add(minutes(5)))
	recordAlert(t, s, n)
	makeDead(t, s, getDelivery(t, s, n.Deliveries[0].ID))

	got, err := s.DeadDeliveryGroups(testCtx(t), outbox.AlertsForm)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Form != "contact" || got[0].Route != "hook" || got[0].Channel != outbox.ChannelWebhook ||
		got[0].Submissions != 2 || !got[0].Since.Equal(t0) {
		t.Errorf("dead groups = %+v, want contact/hook webhook with 2 submissions since %s", got, t0)
	}
	if err := s.Retry(testCtx(t), dead[1].ID, t0.Add(minutes(10))); err != nil {
		t.Fatal(err)
	}
	if err := s.Retry(testCtx(t), dead[2].ID, t0.Add(minutes(10))); err != nil {
		t.Fatal(err)
	}
	if got, err := s.DeadDeliveryGroups(testCtx(t), outbox.AlertsForm); err != nil || len(got) != 0 {
		t.Errorf("dead groups after retrying both = %+v (%v), want none", got, err)
	}
})

var _ = register("FeedbackCountsSinceByKind", func(t *testing.T, s outbox.Store) {
	var msgs []string
	for _, to := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		_, msg := sentDelivery(t, s, to)
		msgs = append(msgs, msg)
	}
	for i, f := range []outbox.Feedback{
		{Kind: outbox.FeedbackDelivered, ReceivedAt: t0.Add(-2 * time.Hour)}, // before the window
		{Kind: outbox.FeedbackDelivered, ReceivedAt: t0.Add(minutes(1))},
		{Kind: outbox.FeedbackBounced, BounceType: outbox.BounceHard, ReceivedAt: t0.Add(minutes(2))},
		{Kind: outbox.FeedbackComplained, ReceivedAt: t0.Add(minutes(3))},
	} {
		f.Source, f.ReceiptID, f.ProviderMessageID, f.OccurredAt = "ses", fmt.Sprint("r", i), msgs[max(i-1, 0)], f.ReceivedAt
		if _, err := s.RecordFeedback(testCtx(t), f); err != nil {
			t.Fatalf("record feedback %d: %v", i, err)
		}
	}
	got, err := s.FeedbackCounts(testCtx(t), t0)
	if err != nil {
		t.Fatal(err)
	}
	if want := (outbox.FeedbackCounts{Delivered: 1, Bounced: 1, Complained: 1, Submissions: 2}); got != want {
		t.Errorf("feedback counts = %+v, want %+v", got, want)
	}
})
