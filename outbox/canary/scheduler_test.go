package canary_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/canary"
	"github.com/formoutbox/caddy-form-outbox/outbox/digest"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// t0 is a period start of every 1h: the canaries below run every hour.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// contactForm is a form with a guarded e-mail route, a webhook, a daily digest and an
// autoreply, provisioned; its canary runs every hour.
func contactForm(t *testing.T) (*intake.Config, canary.Form) {
	t.Helper()
	c := &intake.Config{
		Form:   "contact",
		Fields: []intake.FieldSpec{{Name: "name", Required: true}, {Name: "email", Email: true}},
		Routes: []intake.Route{
			{Name: "sales", Channel: outbox.ChannelEmail, To: []string{"sales@example.com"},
				When: []intake.Guard{{Field: "name", Op: intake.GuardIs, Values: []string{"nobody"}}}},
			{Name: "crm", Channel: outbox.ChannelWebhook, URL: "https://crm.example.com/hook", Secret: "whsec_c2VjcmV0"},
			{Name: "daily", Channel: outbox.ChannelEmail, To: []string{"boss@example.com"}, Digest: "daily at 08:00"},
		},
		Autoreply: &intake.Autoreply{From: "Example <hello@example.com>", Subject: "Thanks",
			BodyText: filepath.Join("..", "..", "intake", "testdata", "templates", "autoreply.txt")},
		IPHashKey: []byte("k"),
	}
	if err := c.Provision(); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return c, canary.Form{Name: "contact", Every: time.Hour, Routes: c.CanaryRoutes(), Plan: c.PlanCanary}
}

func newScheduler(s canary.Store, forms ...canary.Form) *canary.Scheduler {
	return canary.New(canary.Config{Store: s, Forms: forms})
}

func runDue(t *testing.T, sc *canary.Scheduler, now time.Time) {
	t.Helper()
	if err := sc.RunDue(ctxFor(t), now); err != nil {
		t.Fatalf("RunDue at %s: %v", now, err)
	}
}

// canaries lists the form's test submissions, oldest first, as the inbox would.
func canaries(t *testing.T, s outbox.Store) []outbox.Submission {
	t.Helper()
	subs, _, err := s.SearchSubmissions(ctxFor(t), outbox.InboxFilter{Forms: []string{"contact"}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(subs)-1; i < j; i, j = i+1, j-1 {
		subs[i], subs[j] = subs[j], subs[i]
	}
	for _, sub := range subs {
		if !sub.Test {
			t.Errorf("submission %s is not marked test", sub.ID)
		}
	}
	return subs
}

// send plays the worker: it claims what is due at now and records each delivery's
// outcome by its route (sent, or dead with the error "500 Internal Server Error");
// routes missing from outcomes are left leased.
func send(t *testing.T, s outbox.Store, now time.Time, outcomes map[string]outbox.DeliveryStatus) {
	t.Helper()
	ctx := ctxFor(t)
	claimed, err := s.Claim(ctx, outbox.ClaimParams{Owner: "w", Limit: 100, Lease: time.Minute, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range claimed {
		status, ok := outcomes[d.Route]
		if !ok {
			continue
		}
		c := outbox.Completion{DeliveryID: d.ID, LeaseToken: d.LeaseToken, Status: status, Now: now, Provider: "fake",
			Attempt: outbox.Attempt{DeliveryID: d.ID, Attempt: d.Attempts, Provider: "fake", StartedAt: now, FinishedAt: now, Outcome: outbox.OutcomeSent}}
		if status == outbox.DeliveryDead {
			c.LastError, c.Attempt.Outcome, c.Attempt.Error = "500 Internal Server Error", outbox.OutcomePermanent, "500 Internal Server Error"
		}
		if err := outbox.CompleteOne(ctx, s, c); err != nil {
			t.Fatal(err)
		}
	}
}

func results(t *testing.T, s outbox.Store) map[string]outbox.CanaryResult {
	t.Helper()
	rs, err := s.CanaryResults(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]outbox.CanaryResult{}
	for _, r := range rs {
		out[r.Form+"/"+r.Route] = r
	}
	return out
}

func forEachStore(t *testing.T, fn func(t *testing.T, s outbox.Store)) {
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

// TestOneCanaryPerPeriod: the first pass of a period stores its canary, later passes
// of the period none, the next period's first pass the next one.
func TestOneCanaryPerPeriod(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		_, f := contactForm(t)
		sc := newScheduler(s, f)
		runDue(t, sc, t0.Add(time.Second))
		runDue(t, sc, t0.Add(30*time.Minute))
		runDue(t, sc, t0.Add(59*time.Minute))
		if got := canaries(t, s); len(got) != 1 || got[0].ID != canary.RunID("contact", t0) {
			t.Fatalf("canaries after three passes of one period = %d, want 1 with RunID", len(got))
		}
		runDue(t, sc, t0.Add(time.Hour))
		if got := canaries(t, s); len(got) != 2 || !got[1].CreatedAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("canaries after the next period began = %d, want 2", len(got))
		}
	})
}

// TestCanaryIsATestEverywhere: the canary is an accepted test submission; the webhook
// carries "test":true; no route's guard held it back, the digest route and the
// autoreply planned nothing; the overview counts it apart from leads; no digest lists it.
func TestCanaryIsATestEverywhere(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		ctx := ctxFor(t)
		_, f := contactForm(t)
		runDue(t, canary.New(canary.Config{Store: s, Forms: []canary.Form{f}}), t0.Add(time.Minute))
		subs := canaries(t, s)
		if len(subs) != 1 || subs[0].Status != outbox.SubmissionAccepted {
			t.Fatalf("canaries = %+v, want one accepted", subs)
		}
		ds, err := s.ListDeliveries(ctx, subs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		var routes []string
		for _, d := range ds {
			routes = append(routes, d.Route)
			var p outbox.Payload
			if err := json.Unmarshal(d.Payload, &p); err != nil {
				t.Fatal(err)
			}
			if d.Route == "crm" && !strings.Contains(string(p.Body), `"test":true`) {
				t.Errorf("webhook body %s has no \"test\":true", p.Body)
			}
			if d.Route == "sales" && !strings.HasPrefix(p.Subject, "[test] ") {
				t.Errorf("e-mail subject %q is not marked [test]", p.Subject)
			}
		}
		slices.Sort(routes)
		if strings.Join(routes, ",") != "crm,sales" {
			t.Errorf("canary deliveries on routes %v, want sales (its guard bypassed) and crm: no digest, no autoreply", routes)
		}
		ov, err := s.Overview(ctx, nil, t0, t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(ov.Submissions) != 1 || !ov.Submissions[0].Test || ov.Submissions[0].All != 1 {
			t.Errorf("overview submissions = %+v, want only the test count", ov.Submissions)
		}
		sched, err := digest.Parse("every 1h")
		if err != nil {
			t.Fatal(err)
		}
		closer := digest.NewCloser(digest.Config{Store: s, Routes: []digest.Route{{Form: "contact", Name: "daily",
			Schedule: sched, To: []string{"boss@example.com"}, MaxAttempts: 8}}})
		if err := closer.CloseDue(ctx, t0); err != nil { // the route is first seen in the canary's period
			t.Fatal(err)
		}
		if err := closer.CloseDue(ctx, t0.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if evs, err := s.ListEvents(ctx, outbox.EventDigestCreated, 10); err != nil || len(evs) != 0 {
			t.Errorf("digests written = %d (%v), want none for a period holding only the canary", len(evs), err)
		}
	})
}

// TestVerdictsFollowTheProvidersAnswers: a sent route passes, a dead one fails with its
// error, at once; a route still unsent at the deadline fails then, not before. A later
// canary that passes replaces the failure, and the alert source follows.
func TestVerdictsFollowTheProvidersAnswers(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		_, f := contactForm(t)
		f.Deadline = 10 * time.Minute
		sc := newScheduler(s, f)
		alerts := canary.AlertSource(s, []canary.Form{f})
		conditions := func() []outbox.AlertCondition {
			t.Helper()
			cs, err := alerts.Conditions(ctxFor(t), t0)
			if err != nil {
				t.Fatal(err)
			}
			return cs
		}

		start := t0.Add(time.Second)
		runDue(t, sc, start)
		send(t, s, start, map[string]outbox.DeliveryStatus{"crm": outbox.DeliverySent}) // sales stays leased
		runDue(t, sc, start.Add(5*time.Second))
		got := results(t, s)
		if r := got["contact/crm"]; !r.Passed || r.Channel != outbox.ChannelWebhook || !r.At.Equal(start.Add(5*time.Second)) {
			t.Errorf("crm result = %+v, want passed at the pass after its send", r)
		}
		if _, ok := got["contact/sales"]; ok {
			t.Errorf("sales has a verdict before its deadline: %+v", got["contact/sales"])
		}
		runDue(t, sc, start.Add(10*time.Minute))
		r := results(t, s)["contact/sales"]
		if r.Passed || r.Error != "not sent within 10m0s (sending)" || r.Channel != outbox.ChannelEmail {
			t.Errorf("sales result at the deadline = %+v, want failed, not sent within 10m0s", r)
		}
		if cs := conditions(); len(cs) != 1 || cs[0].Kind != outbox.AlertCanaryFailed || cs[0].Key != "contact/sales" ||
			cs[0].Channel != "email" || cs[0].Form != "contact" || strings.Contains(cs[0].Summary, "sending") ||
			!cs[0].Since.Equal(start.Add(10*time.Minute)) {
			t.Errorf("conditions = %+v, want one canary_failed for contact/sales on email, without the error text", cs)
		}

		// The next hour: crm dies at once, sales arrives.
		next := t0.Add(time.Hour)
		runDue(t, sc, next)
		send(t, s, next.Add(2*time.Minute), map[string]outbox.DeliveryStatus{"crm": outbox.DeliveryDead, "sales": outbox.DeliverySent})
		runDue(t, sc, next.Add(2*time.Minute))
		got = results(t, s)
		if r := got["contact/crm"]; r.Passed || r.Error != "dead: 500 Internal Server Error" || !r.PeriodStart.Equal(next) {
			t.Errorf("crm result = %+v, want failed: dead with the provider's error", r)
		}
		if r := got["contact/sales"]; !r.Passed || !r.PeriodStart.Equal(next) {
			t.Errorf("sales result = %+v, want passed", r)
		}
		if cs := conditions(); len(cs) != 1 || cs[0].Key != "contact/crm" || cs[0].Channel != "webhook" ||
			!cs[0].Since.Equal(next.Add(2*time.Minute)) {
			t.Errorf("conditions = %+v, want only contact/crm: sales resolved", cs)
		}
		// A route no longer configured is not reported, whatever its last verdict.
		f.Routes = []string{"sales"}
		if cs, _ := canary.AlertSource(s, []canary.Form{f}).Conditions(ctxFor(t), next); len(cs) != 0 {
			t.Errorf("conditions without crm configured = %+v, want none", cs)
		}
	})
}

// TestTwoSchedulersOnOneStoreRunOnce: schedulers of two instances (two stores on one
// database), racing over three periods, store one canary per period and record each
// route's verdict once.
func TestTwoSchedulersOnOneStoreRunOnce(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		cfg := storetest.NewPostgresSchema(t)
		raceSchedulers(t, storetest.OpenPostgresAt(t, cfg), storetest.OpenPostgresAt(t, cfg))
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "outbox.db")
		raceSchedulers(t, storetest.OpenSQLiteAt(t, path), storetest.OpenSQLiteAt(t, path))
	})
}

func raceSchedulers(t *testing.T, a, b outbox.Store) {
	_, f := contactForm(t)
	var scs []*canary.Scheduler
	for _, s := range []outbox.Store{a, b, a, b} {
		scs = append(scs, newScheduler(s, f))
	}
	for p := range 3 {
		now := t0.Add(time.Duration(p)*time.Hour + time.Second)
		var wg sync.WaitGroup
		for _, sc := range scs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := sc.RunDue(context.Background(), now); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		send(t, a, now, map[string]outbox.DeliveryStatus{"crm": outbox.DeliverySent, "sales": outbox.DeliverySent})
	}
	subs := canaries(t, a)
	if len(subs) != 3 {
		t.Fatalf("canaries = %d after 3 periods with 4 schedulers, want 3", len(subs))
	}
	for _, sub := range subs {
		ds, err := a.ListDeliveries(ctxFor(t), sub.ID)
		if err != nil || len(ds) != 2 {
			t.Errorf("canary %s has %d deliveries (%v), want 2", sub.ID, len(ds), err)
		}
	}
	run, err := a.LastCanaryRun(ctxFor(t), "contact")
	if err != nil || !run.PeriodStart.Equal(t0.Add(2*time.Hour)) || run.SubmissionID != subs[2].ID {
		t.Errorf("last run = %+v (%v), want the third period's", run, err)
	}
}

// TestRestartCatchesUpAtMostOneRun: a scheduler started after five periods without one
// stores a single canary, for the current period; one started again within that period
// stores none.
func TestRestartCatchesUpAtMostOneRun(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		_, f := contactForm(t)
		runDue(t, newScheduler(s, f), t0.Add(time.Minute))
		late := t0.Add(5*time.Hour + 20*time.Minute)
		runDue(t, newScheduler(s, f), late)
		runDue(t, newScheduler(s, f), late.Add(10*time.Minute))
		subs := canaries(t, s)
		if len(subs) != 2 || !subs[1].CreatedAt.Equal(late) || subs[1].ID != canary.RunID("contact", t0.Add(5*time.Hour)) {
			t.Fatalf("canaries = %d, want the first and one for the current period only", len(subs))
		}
		// The first run was never sent: its time ran out when the next one began.
		if r := results(t, s)["contact/crm"]; r.Passed || !r.PeriodStart.Equal(t0) {
			t.Errorf("first run's crm verdict = %+v, want failed", r)
		}
	})
}

// TestStoppedBetweenAcceptAndRunRecord: a canary stored without its run recorded (the
// scheduler stopped in between) is not stored twice: the next pass finds it a duplicate
// and records the run.
func TestStoppedBetweenAcceptAndRunRecord(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		c, f := contactForm(t)
		id := canary.RunID("contact", t0)
		sub, ds, err := c.PlanCanary(id, t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		storetest.MustAccept(t, s, sub, ds...)
		if _, err := s.LastCanaryRun(ctxFor(t), "contact"); !errors.Is(err, outbox.ErrNotFound) {
			t.Fatalf("run before the pass: %v", err)
		}
		runDue(t, newScheduler(s, f), t0.Add(time.Minute))
		if got := canaries(t, s); len(got) != 1 {
			t.Errorf("canaries = %d, want the one stored before", len(got))
		}
		if run, err := s.LastCanaryRun(ctxFor(t), "contact"); err != nil || run.SubmissionID != id {
			t.Errorf("run = %+v (%v), want recorded for %s", run, err, id)
		}
	})
}

// TestLoopSleepsUntilTheNextPeriod: the running scheduler stores a canary at start,
// looks at it every few seconds until every route has its verdict, then waits for the
// next period with no query.
func TestLoopSleepsUntilTheNextPeriod(t *testing.T) {
	s := storetest.OpenSQLite(t)
	_, f := contactForm(t)
	clock := outbox.NewManualClock(t0.Add(30 * time.Minute))
	woken := make(chan struct{}, 10)
	sc := canary.New(canary.Config{Store: s, Forms: []canary.Form{f}, Now: clock.Now, After: clock.After,
		OnRun: func() { woken <- struct{}{} }})
	sc.Start(context.Background())
	defer sc.Stop()
	<-woken
	if !clock.AwaitWaiters(1, 10*time.Second) {
		t.Fatal("scheduler does not wait on the clock")
	}
	send(t, s, clock.Now(), map[string]outbox.DeliveryStatus{"crm": outbox.DeliverySent, "sales": outbox.DeliverySent})
	clock.Advance(5 * time.Second) // the next look at the open run
	if !clock.AwaitWaiters(1, 10*time.Second) {
		t.Fatal("scheduler does not wait on the clock after its look")
	}
	if got := results(t, s); !got["contact/crm"].Passed || !got["contact/sales"].Passed {
		t.Fatalf("results = %+v, want both passed", got)
	}
	// Judged: the next wake-up is the next period, not sooner.
	clock.Advance(29*time.Minute + 50*time.Second)
	if len(canaries(t, s)) != 1 || clock.Waiters() != 1 {
		t.Fatalf("before the next period: %d canaries, %d waiters; want 1 and the scheduler still asleep", len(canaries(t, s)), clock.Waiters())
	}
	clock.Advance(5 * time.Second)
	<-woken
	if got := canaries(t, s); len(got) != 2 {
		t.Fatalf("canaries after the period began = %d, want 2", len(got))
	}
}

// TestRunIDIsAUUIDv7OfThePeriod: the id sorts by the period's start like any UUIDv7
// and differs per form and period.
func TestRunIDIsAUUIDv7OfThePeriod(t *testing.T) {
	id := canary.RunID("contact", t0)
	if id.Version() != 7 || id.Variant() != uuid.RFC4122 {
		t.Errorf("RunID %s: version %d, variant %v; want a UUIDv7", id, id.Version(), id.Variant())
	}
	if sec, nsec := id.Time().UnixTime(); time.Unix(sec, nsec).UTC() != t0 {
		t.Errorf("RunID time = %s, want the period start %s", time.Unix(sec, nsec).UTC(), t0)
	}
	if id != canary.RunID("contact", t0) || id == canary.RunID("newsletter", t0) || id == canary.RunID("contact", t0.Add(time.Hour)) {
		t.Error("RunID is not one id per form and period")
	}
}
