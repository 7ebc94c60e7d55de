package alert_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/alert"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// conditions is a source whose conditions the test sets.
type conditions struct {
	mu   sync.Mutex
	cs   []outbox.AlertCondition
	fail error
}

func (c *conditions) set(cs ...outbox.AlertCondition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cs = cs
}

func (c *conditions) Name() string { return "test" }

func (c *conditions) Conditions(context.Context, time.Time) ([]outbox.AlertCondition, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cs, c.fail
}

var deadHook = outbox.AlertCondition{Kind: outbox.AlertDeliveryDead, Key: "contact/hook", Form: "contact",
	Summary: "route hook of form contact gave up on 2 submissions", Affected: 2, Channel: "webhook"}

var (
	mailOwner = alert.Target{Channel: outbox.ChannelEmail, To: "owner@example.com"}
	slackOps  = alert.Target{Channel: outbox.ChannelSlack, URL: "https://hooks.slack.test/ops"}
	hookOps   = alert.Target{Channel: outbox.ChannelWebhook, URL: "https://ops.example.com/alerts"}
)

func evaluate(t *testing.T, e *alert.Evaluator) alert.Pass {
	t.Helper()
	p, err := e.Evaluate(context.Background())
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	return p
}

// notices returns the deliveries of every notice of kind ev, oldest notice first.
func notices(t *testing.T, s outbox.Store, ev string) [][]outbox.Delivery {
	t.Helper()
	evs, err := s.ListEvents(context.Background(), ev, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]outbox.Delivery
	for i := len(evs) - 1; i >= 0; i-- {
		ds, err := s.ListDeliveries(context.Background(), evs[i].SubmissionID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ds)
	}
	return out
}

func payloadOf(t *testing.T, d outbox.Delivery) outbox.Payload {
	t.Helper()
	var p outbox.Payload
	if err := json.Unmarshal(d.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenStillOncePerWindowThenResolved(t *testing.T) {
	s := storetest.OpenSQLite(t)
	clock := outbox.NewManualClock(t0)
	src := &conditions{}
	src.set(deadHook)
	e := alert.New(alert.Config{Store: s, Sources: []outbox.AlertSource{src}, Targets: []alert.Target{mailOwner, slackOps},
		Now: clock.Now, Renotify: time.Hour, InboxURL: "https://example.com/inbox"})

	if p := evaluate(t, e); p.Opened != 1 || len(p.Open) != 1 || p.Open[0].Affected != 2 {
		t.Fatalf("first pass = %+v, want one alert opened with 2 affected", p)
	}
	opened := notices(t, s, outbox.EventAlertOpened)
	if len(opened) != 1 || len(opened[0]) != 2 {
		t.Fatalf("opened notices = %+v, want one with two deliveries (email, slack)", opened)
	}
	for _, d := range opened[0] {
		if d.Status != outbox.DeliveryPending || !strings.HasPrefix(d.Route, "alert-") {
			t.Errorf("notice delivery = %+v, want a pending alert-* delivery", d)
		}
		if d.Channel == outbox.ChannelEmail {
			p := payloadOf(t, d)
			if p.To != "owner@example.com" || !strings.Contains(p.Subject, "Alert: route hook of form contact gave up on 2 submissions") ||
				!strings.Contains(p.Text, "Leads affected: 2") || !strings.Contains(p.Text, "Inbox: https://example.com/inbox/submissions?delivery=dead&form=contact") {
				t.Errorf("email notice = %+v", p)
			}
		}
	}

	clock.Advance(59 * time.Minute)
	if p := evaluate(t, e); p.Opened+p.Still+p.Resolved != 0 {
		t.Errorf("pass inside the window = %+v, want no notice", p)
	}
	worse := deadHook
	worse.Affected, worse.Summary = 5, "route hook of form contact gave up on 5 submissions"
	src.set(worse)
	if p := evaluate(t, e); p.Refreshed != 1 || p.Still != 0 || p.Open[0].Affected != 5 || p.Open[0].Notices != 1 {
		t.Errorf("pass with a new count inside the window = %+v, want the count refreshed and no notice", p)
	}
	clock.Advance(time.Minute)
	if p := evaluate(t, e); p.Still != 1 || p.Open[0].Affected != 5 || p.Open[0].Notices != 2 {
		t.Errorf("pass one window later = %+v, want one still-happening notice, 5 affected", p)
	}
	if p := evaluate(t, e); p.Still != 0 {
		t.Errorf("second pass in the new window = %+v, want none", p)
	}
	still := notices(t, s, outbox.EventAlertStill)
	if len(still) != 1 || !strings.Contains(payloadOf(t, still[0][0]).Text, "Still happening (notice 2)") {
		t.Errorf("still notices = %+v", still)
	}

	src.set()
	clock.Advance(time.Minute)
	if p := evaluate(t, e); p.Resolved != 1 || len(p.Open) != 0 {
		t.Errorf("pass after the condition went = %+v, want it resolved", p)
	}
	if p := evaluate(t, e); p.Resolved != 0 {
		t.Errorf("second pass = %+v, want nothing more", p)
	}
	if res := notices(t, s, outbox.EventAlertResolved); len(res) != 1 || len(res[0]) != 2 {
		t.Errorf("resolved notices = %+v, want one with two deliveries", res)
	}
}

func TestNeverThroughTheFailingChannelOrDestination(t *testing.T) {
	s := storetest.OpenSQLite(t)
	src := &conditions{}
	other := alert.Target{Channel: outbox.ChannelEmail, To: "deputy@example.com"}
	e := alert.New(alert.Config{Store: s, Sources: []outbox.AlertSource{src}, Targets: []alert.Target{mailOwner, other, hookOps},
		Now: func() time.Time { return t0 }})
	mailDown := outbox.AlertCondition{Kind: outbox.AlertDeliveryDead, Key: "contact/email", Channel: "email", Summary: "email dead"}
	ownerBounces := outbox.AlertCondition{Kind: outbox.AlertFeedbackRate, Key: "owner", Destination: "owner@example.com", Summary: "bounces"}
	src.set(deadHook, mailDown, ownerBounces)
	if p := evaluate(t, e); p.Opened != 3 {
		t.Fatalf("pass = %+v, want 3 opened", p)
	}
	got := map[string][]string{}
	for _, n := range notices(t, s, outbox.EventAlertOpened) {
		sub, err := s.GetSubmission(context.Background(), n[0].SubmissionID)
		if err != nil {
			t.Fatal(err)
		}
		kind, _ := sub.Data.Get("key")
		for _, d := range n {
			got[kind] = append(got[kind], d.Recipient)
		}
	}
	want := map[string]string{
		"contact/hook":  "deputy@example.com owner@example.com", // the webhook failed: e-mail only
		"contact/email": "https://ops.example.com/alerts",       // e-mail failed: the webhook only
		"owner":         "deputy@example.com https://ops.example.com/alerts",
	}
	for k, w := range want {
		slices.Sort(got[k])
		if g := strings.Join(got[k], " "); g != w {
			t.Errorf("%s went to %q, want %q", k, g, w)
		}
	}
	if u := alert.Uncovered([]alert.Target{mailOwner}, []outbox.Channel{outbox.ChannelWebhook, outbox.ChannelAutoreply, outbox.ChannelEmail}); len(u) != 1 || u[0] != outbox.ChannelEmail {
		t.Errorf("uncovered = %v, want [email]", u)
	}
}

// A notice with no independent target still opens the alert: it shows in the inbox, the
// CLI and the metrics.
func TestNoIndependentTargetStillRecords(t *testing.T) {
	s := storetest.OpenSQLite(t)
	src := &conditions{}
	src.set(outbox.AlertCondition{Kind: outbox.AlertDeliveryDead, Key: "contact/email", Channel: "email", Summary: "email dead"})
	e := alert.New(alert.Config{Store: s, Sources: []outbox.AlertSource{src}, Targets: []alert.Target{mailOwner}, Now: func() time.Time { return t0 }})
	if p := evaluate(t, e); p.Opened != 1 || len(p.Open) != 1 {
		t.Fatalf("pass = %+v, want the alert open", p)
	}
	if n := notices(t, s, outbox.EventAlertOpened); len(n) != 1 || len(n[0]) != 0 {
		t.Errorf("notices = %+v, want one without deliveries", n)
	}
}

func TestFailedSourceOrOtherInstanceResolvesNothing(t *testing.T) {
	s := storetest.OpenSQLite(t)
	clock := outbox.NewManualClock(t0)
	src := &conditions{}
	local := outbox.AlertCondition{Kind: outbox.AlertSpoolBacklog, Key: "a", Summary: "spool", Local: true}
	src.set(deadHook, local)
	a := alert.New(alert.Config{Store: s, Sources: []outbox.AlertSource{src}, Instance: "a", Now: clock.Now})
	evaluate(t, a)

	b := alert.New(alert.Config{Store: s, Sources: []outbox.AlertSource{&conditions{}}, Instance: "b", Now: clock.Now})
	if p := evaluate(t, b); p.Resolved != 1 || len(p.Open) != 1 || p.Open[0].Instance != "a" {
		t.Errorf("other instance's pass = %+v, want the shared alert resolved and a's local one kept", p)
	}
	src.set()
	src.fail = errors.New("database is down")
	if p, err := a.Evaluate(context.Background()); err != nil || p.Resolved != 0 {
		t.Errorf("pass with a failed source = %+v (%v), want nothing resolved", p, err)
	}
	src.fail = nil
	if p := evaluate(t, a); p.Resolved != 1 {
		t.Errorf("pass once the source answers = %+v, want the local alert resolved", p)
	}
}

// Two evaluators polling the same conditions on one store, at the same moments, open
// one alert and write one notice per decision.
func TestTwoEvaluatorsOneStoreOneAlert(t *testing.T) {
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			clock := outbox.NewManualClock(t0)
			src := &conditions{}
			src.set(deadHook)
			var es []*alert.Evaluator
			for _, inst := range []string{"a", "b"} {
				es = append(es, alert.New(alert.Config{Store: s, Sources: []outbox.AlertSource{alert.DeadDeliveries(s), src},
					Targets: []alert.Target{mailOwner}, Instance: inst, Now: clock.Now, Renotify: time.Hour}))
			}
			both := func() {
				var wg sync.WaitGroup
				for _, e := range es {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := e.Evaluate(context.Background()); err != nil {
							t.Errorf("evaluate: %v", err)
						}
					}()
				}
				wg.Wait()
			}
			both()
			clock.Advance(time.Hour)
			both()
			src.set()
			clock.Advance(time.Minute)
			both()
			for ev, want := range map[string]int{outbox.EventAlertOpened: 1, outbox.EventAlertStill: 1, outbox.EventAlertResolved: 1} {
				if n := notices(t, s, ev); len(n) != want || len(n[0]) != 1 {
					t.Errorf("%s notices = %d (%+v), want %d with one delivery each", ev, len(n), n, want)
				}
			}
		})
	}
}
