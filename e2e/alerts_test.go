package e2e

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers/slackfake"
	"github.com/formoutbox/caddy-form-outbox/providers/telegramfake"
)

// alertsCaddyfile sends the contact form to a webhook that fails, with two attempts and
// short backoff, and its owner alerts to {{ALERT_TARGETS}}, checked every 200ms.
const alertsCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: these tests alert on dead deliveries and dead notices; e2e/park_test.go checks parking.
		park off
		{{STORAGE}}
		retry {
			base 100ms
			max_delay 200ms
			webhook_attempts 2
		}
		worker {
			poll_interval 300ms
		}
		inbox_url https://example.com/inbox
		alerts {
			{{ALERT_TARGETS}}
			interval 200ms
			renotify 1h
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		notify webhook {{HOOK}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
}
`

func alertsConfig(storage, targets, hook string) string {
	return strings.NewReplacer("{{STORAGE}}", storage, "{{ALERT_TARGETS}}", targets, "{{HOOK}}", hook).Replace(alertsCaddyfile)
}

// failingHook answers 500 until healed, then 204.
type failingHook struct {
	srv    *httptest.Server
	healed atomic.Bool
	posts  atomic.Int32
}

func newFailingHook(t *testing.T) *failingHook {
	h := &failingHook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.posts.Add(1)
		if h.healed.Load() {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// postLead posts one lead to the contact form and wants it accepted.
func postLead(t *testing.T, p *caddyProc, message string) {
	t.Helper()
	resp, body := do(t, keyedJSONPost(context.Background(), p.URL("/contact"), message, ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("post lead: %d %s", resp.StatusCode, body)
	}
}

// alertsList is GET /form_outbox/alerts?resolved=5 on p.
func alertsList(t *testing.T, p *caddyProc) adminapi.AlertList {
	t.Helper()
	var l adminapi.AlertList
	p.adminJSON(t, http.MethodGet, "/form_outbox/alerts?resolved=5", http.StatusOK, &l)
	return l
}

// TestAlertDeadDeliveryTwoInstancesOnPostgres: a webhook route whose receiver always
// fails gives up on a lead; with two Caddy instances evaluating alerts on one PostgreSQL,
// the owner's Slack gets exactly one alert within seconds, then, after the dead delivery
// is retried and succeeds, exactly one resolved notice.
func TestAlertDeadDeliveryTwoInstancesOnPostgres(t *testing.T) {
	t.Parallel()
	pc := storetest.NewPostgresSchemaName(t)
	hook := newFailingHook(t)
	sl := slackfake.New()
	t.Cleanup(sl.Close)
	storage := `storage postgres "` + pc.DSN + `" {
			schema ` + pc.Schema + `
		}`
	cf := alertsConfig(storage, "notify slack "+sl.URL(), hook.srv.URL+"/hook")
	a := newCaddy(t, caddyOpts{Caddyfile: cf})
	b := newCaddy(t, caddyOpts{Caddyfile: cf})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := drillConn(t, ctx, pc.DSN, pc.Schema)

	postLead(t, a, "a lead for the alerts test")
	if err := waitFor(30*time.Second, func() bool { return len(sl.Messages()) >= 1 }); err != nil {
		t.Fatalf("no alert reached Slack: %v\nA:\n%s\nB:\n%s", err, a.Log(), b.Log())
	}
	first := slackfake.Unescape(sl.Messages()[0].Text)
	for _, want := range []string{"Alert: route webhook of form contact (webhook) gave up on 1 submission", "Leads affected: 1",
		"Form: contact", "Inbox: https://example.com/inbox/submissions?delivery=dead&form=contact"} {
		if !strings.Contains(first, want) {
			t.Errorf("the alert says no %q:\n%s", want, first)
		}
	}
	var deadID string
	if err := conn.QueryRow(ctx, `SELECT d.id::text FROM deliveries d JOIN submissions s ON s.id = d.submission_id
		WHERE s.form = 'contact' AND d.status = 'dead'`).Scan(&deadID); err != nil {
		t.Fatalf("the dead delivery: %v", err)
	}
	// Both instances list it, from the database.
	for _, p := range []*caddyProc{a, b} {
		if l := alertsList(t, p); len(l.Open) != 1 || l.Open[0].Key != "contact/webhook" || l.Open[0].Affected != 1 {
			t.Errorf("alerts on one instance = %+v, want contact/webhook open with 1 lead", l)
		}
	}
	if out := b.cli(t, true, "alerts"); !strings.Contains(out, "delivery_dead") || !strings.Contains(out, "contact/webhook") {
		t.Errorf("caddy form-outbox alerts printed:\n%s", out)
	}

	hook.healed.Store(true)
	a.adminJSON(t, http.MethodPost, "/form_outbox/deliveries/"+deadID+"/retry", http.StatusOK, nil)
	if err := waitFor(30*time.Second, func() bool { return len(sl.Messages()) >= 2 }); err != nil {
		t.Fatalf("no resolved notice reached Slack: %v\nA:\n%s", err, a.Log())
	}
	if got := strings.TrimLeft(slackfake.Unescape(sl.Messages()[1].Text), "\u2068"); !strings.HasPrefix(got, "Resolved: route webhook of form contact") {
		t.Errorf("second message = %q, want the resolved notice", got)
	}
	// Every instance has evaluated since; the database allowed one notice per decision.
	var opened, resolved, notices int
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'alert.opened'), count(*) FILTER (WHERE kind = 'alert.resolved')
		FROM events`).Scan(&opened, &resolved); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM submissions WHERE form = '_alerts' AND test`).Scan(&notices); err != nil {
		t.Fatal(err)
	}
	if opened != 1 || resolved != 1 || notices != 2 || len(sl.Messages()) != 2 {
		t.Errorf("opened %d, resolved %d, notice submissions %d, Slack messages %d; want 1, 1, 2, 2", opened, resolved, notices, len(sl.Messages()))
	}
	if l := alertsList(t, b); len(l.Open) != 0 || len(l.Resolved) != 1 {
		t.Errorf("alerts after the retry = %+v, want none open, one resolved", l)
	}
}

// TestAlertDeadDeliveryOnSQLite: the same on SQLite with one instance, the owner told on
// Telegram and by e-mail; neither is the failing channel.
func TestAlertDeadDeliveryOnSQLite(t *testing.T) {
	t.Parallel()
	hook := newFailingHook(t)
	tg := telegramfake.New(telegramToken)
	t.Cleanup(tg.Close)
	targets := `email owner@example.com
			notify telegram -100777 {
				token {env.E2E_TELEGRAM_TOKEN}
				endpoint ` + tg.URL() + `
			}`
	p := newCaddy(t, caddyOpts{Caddyfile: alertsConfig("storage sqlite {{DIR}}/forms.db", targets, hook.srv.URL+"/hook"),
		Env: []string{"E2E_TELEGRAM_TOKEN=" + telegramToken}})
	db := openSQLite(t, filepath.Join(p.dir, "forms.db"))

	postLead(t, p, "a lead for the alerts test")
	if err := waitFor(30*time.Second, func() bool { return len(tg.Messages()) >= 1 }); err != nil {
		t.Fatalf("no alert reached Telegram: %v\n%s", err, p.Log())
	}
	if m := tg.Messages()[0]; m.Message.ChatID != "-100777" || !strings.Contains(m.Visible, "gave up on 1 submission") {
		t.Errorf("telegram got %+v", m)
	}
	// The e-mail notice went through the (file) e-mail provider, sent like any delivery.
	if err := waitFor(30*time.Second, func() bool {
		return countOf(t, db, `SELECT count(*) FROM deliveries d JOIN submissions s ON s.id = d.submission_id
			WHERE s.form = '_alerts' AND d.channel = 'email' AND d.status = 'sent' AND d.recipient = 'owner@example.com'`) == 1
	}); err != nil {
		t.Fatalf("the e-mail notice was not sent: %v\n%s", err, p.Log())
	}
	p.waitMetric(t, 1, "form_outbox_alerts_open", "kind", "delivery_dead")
	deadID := deadContactDelivery(t, db)
	hook.healed.Store(true)
	p.adminJSON(t, http.MethodPost, "/form_outbox/deliveries/"+deadID+"/retry", http.StatusOK, nil)
	if err := waitFor(30*time.Second, func() bool { return len(tg.Messages()) >= 2 }); err != nil {
		t.Fatalf("no resolved notice reached Telegram: %v\n%s", err, p.Log())
	}
	if m := tg.Messages()[1]; !strings.HasPrefix(strings.TrimLeft(m.Visible, "\u2068"), "Resolved: route webhook of form contact") {
		t.Errorf("second telegram message = %q, want the resolved notice", m.Visible)
	}
	p.waitMetric(t, 0, "form_outbox_alerts_open", "kind", "delivery_dead")
	if n := countOf(t, db, `SELECT count(*) FROM alerts WHERE resolved_at IS NOT NULL`); n != 1 || len(tg.Messages()) != 2 {
		t.Errorf("%d resolved alerts, %d telegram messages; want 1 and 2", n, len(tg.Messages()))
	}
}

// deadContactDelivery is the id of the contact form's one dead delivery.
func deadContactDelivery(t *testing.T, db *sql.DB) string {
	t.Helper()
	var id string
	if err := db.QueryRow(`SELECT d.id FROM deliveries d JOIN submissions s ON s.id = d.submission_id
		WHERE s.form = 'contact' AND d.status = 'dead'`).Scan(&id); err != nil {
		t.Fatalf("the dead delivery: %v", err)
	}
	return id
}

// countOf runs a count query.
func countOf(t *testing.T, db *sql.DB, q string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestDeadAlertNoticeDoesNotAlertAboutItself: the owner's only target refuses every
// notice; the notice goes dead, is logged and counted, and raises no alert of its own,
// while the alert it carried still resolves once its cause is handled.
func TestDeadAlertNoticeDoesNotAlertAboutItself(t *testing.T) {
	t.Parallel()
	hook := newFailingHook(t)
	sl := slackfake.New()
	t.Cleanup(sl.Close)
	sl.SetDefault(slackfake.NoService()) // 404: permanent, dead after one attempt
	p := newCaddy(t, caddyOpts{Caddyfile: alertsConfig("storage sqlite {{DIR}}/forms.db", "notify slack "+sl.URL(), hook.srv.URL+"/hook")})
	db := openSQLite(t, filepath.Join(p.dir, "forms.db"))

	postLead(t, p, "a lead whose alert cannot be told")
	p.waitMetric(t, 1, "form_outbox_alert_notices_dead_total", "channel", "slack")
	if log := p.Log(); !strings.Contains(log, "an alert notice is dead") {
		t.Errorf("no error logged for the dead notice:\n%s", log)
	}
	deadID := deadContactDelivery(t, db)
	hook.healed.Store(true)
	p.adminJSON(t, http.MethodPost, "/form_outbox/deliveries/"+deadID+"/retry", http.StatusOK, nil)
	// Resolving takes a pass after the notice died; a pass that saw the dead notice as a
	// condition would have opened a second alert by then.
	if err := waitFor(30*time.Second, func() bool {
		return countOf(t, db, `SELECT count(*) FROM alerts WHERE resolved_at IS NOT NULL`) == 1
	}); err != nil {
		t.Fatalf("the alert did not resolve: %v\n%s", err, p.Log())
	}
	if n := countOf(t, db, `SELECT count(*) FROM alerts`); n != 1 {
		t.Errorf("%d alerts, want only the contact/webhook one", n)
	}
}
