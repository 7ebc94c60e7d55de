package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/slackfake"
)

// unreachableCaddyfile is spoolCaddyfile with owner alerts to Slack, polled every 200ms,
// and a store_unreachable threshold of 2s.
const unreachableCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: this test checks the spool's alert; e2e/park_test.go checks parking.
		park off
		storage postgres "{{DSN}}"
		worker {
			poll_interval 300ms
			shutdown_grace 1s
		}
		retry {
			base 200ms
			max_delay 1s
		}
		alerts {
			notify slack {{SLACK}}
			interval 200ms
			renotify 1h
			store_unreachable 2s
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		field message required
		notify webhook {{HOOK}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
}
`

// unreachableThreshold is store_unreachable in unreachableCaddyfile.
const unreachableThreshold = 2 * time.Second

// storeUnreachableNotices are the Slack messages about kind store_unreachable, unescaped.
func storeUnreachableNotices(sl *slackfake.Server) []string {
	var out []string
	for _, m := range sl.Messages() {
		if text := slackfake.Unescape(m.Text); strings.Contains(text, "Kind: store_unreachable") {
			out = append(out, strings.TrimLeft(text, "\u2068"))
		}
	}
	return out
}

// outageFor reads the outage's length from a store_unreachable summary ("... for 5s on
// instance ..."); -1 when it names none.
var outageFor = regexp.MustCompile(`spooled posts for (\d+)s on instance`)

func outageSeconds(text string) int {
	m := outageFor.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestAlertStoreUnreachableThroughCaddy: with PostgreSQL killed, posts are answered
// "queued" from the spool; the outage outlasts store_unreachable, yet no alert can be
// written while the database is down. Once PostgreSQL is back, the spool drains, and the
// owner's Slack gets exactly one "opened" store_unreachable notice saying how long the
// database did not take the spool, then exactly one "resolved" notice; the alerts table
// keeps one resolved row of that kind.
func TestAlertStoreUnreachableThroughCaddy(t *testing.T) {
	t.Parallel()
	pg := newPGCluster(t)
	hook := newReceiver(t)
	sl := slackfake.New()
	t.Cleanup(sl.Close)
	cf := strings.NewReplacer("{{DSN}}", pg.DSN(), "{{HOOK}}", hook.srv.URL, "{{SLACK}}", sl.URL()).Replace(unreachableCaddyfile)
	c := newCaddy(t, caddyOpts{Caddyfile: cf})

	answered := map[string]string{} // id -> answered status
	if code, id, status := postKeyed(t, c, "up-0"); code != http.StatusOK || status != "accepted" || id == "" {
		t.Fatalf("post with the database up: %d %q %q", code, id, status)
	} else {
		answered[id] = status
	}

	pg.Kill()
	for i := range 3 {
		code, id, status := postKeyed(t, c, fmt.Sprintf("down-%d", i))
		if code != http.StatusOK || status != "queued" || id == "" || answered[id] != "" {
			t.Fatalf("post %d with the database down: %d %q %q, want 200 queued with a new id\n%s", i, code, status, id, c.Log())
		}
		answered[id] = status
	}
	// The outage counts from the replayer's first failed pass (outbox/spool/fallback.go),
	// which it logs; then the outage is held past the threshold. That hold is wall time on
	// purpose: the built Caddy runs on the real clock, and the alert is about how long the
	// database stayed away.
	if err := waitFor(30*time.Second, func() bool { return strings.Contains(c.Log(), "spool replay paused") }); err != nil {
		t.Fatalf("the replayer never failed against the dead database: %v\n%s", err, c.Log())
	}
	failing := time.Now()
	if err := waitFor(30*time.Second, func() bool { return time.Since(failing) > unreachableThreshold+time.Second }); err != nil {
		t.Fatal(err)
	}
	if n := len(storeUnreachableNotices(sl)); n != 0 {
		t.Fatalf("%d store_unreachable notices while the database was down: nothing can be written then", n)
	}

	pg.Start()
	if err := waitFor(60*time.Second, allStored(pg.DSN(), answered)); err != nil {
		t.Fatalf("the queued posts were not all stored after PostgreSQL came back: %v\n%s", err, c.Log())
	}
	if err := waitFor(30*time.Second, func() bool { return len(storeUnreachableNotices(sl)) >= 2 }); err != nil {
		t.Fatalf("store_unreachable notices in Slack: %q, want opened then resolved: %v\n%s", storeUnreachableNotices(sl), err, c.Log())
	}
	// Every queued post is also delivered: the worker ran, and the evaluator many passes,
	// after the resolved notice; a second opened one would be in Slack by then.
	if err := waitFor(60*time.Second, func() bool { distinct, _, _ := hook.counts(); return distinct == len(answered) }); err != nil {
		distinct, _, _ := hook.counts()
		t.Fatalf("webhooks delivered for %d of %d submissions: %v", distinct, len(answered), err)
	}
	if err := waitFor(30*time.Second, func() bool { return len(alertsList(t, c).Resolved) == 1 }); err != nil {
		t.Fatalf("alerts API: %+v, want one resolved: %v", alertsList(t, c), err)
	}

	notices := storeUnreachableNotices(sl)
	if len(notices) != 2 {
		t.Fatalf("store_unreachable notices in Slack: %q, want exactly one opened and one resolved", notices)
	}
	opened, resolved := notices[0], notices[1]
	t.Logf("opened:\n%s\nresolved:\n%s", opened, resolved)
	if !strings.HasPrefix(opened, "Alert: the database") || !strings.Contains(opened, "Leads affected: 3") {
		t.Errorf("first notice is not the opened one for 3 posts:\n%s", opened)
	}
	if s := outageSeconds(opened); s < int(unreachableThreshold/time.Second) {
		t.Errorf("the opened notice says an outage of %ds, want at least %s:\n%s", s, unreachableThreshold, opened)
	}
	// The resolved notice tells the whole outage, however the evaluator and the replayer
	// interleaved: the source reports the ended outage for two more polls
	// (outbox/alert/spool.go), which refresh the open alert's summary.
	if !strings.HasPrefix(resolved, "Resolved: the database did not take spooled posts for ") ||
		!strings.Contains(resolved, "; it takes them again") || !strings.Contains(resolved, "Resolved at: ") {
		t.Errorf("second notice is not the resolved one, telling the ended outage:\n%s", resolved)
	}
	if s := outageSeconds(resolved); s < int(unreachableThreshold/time.Second) {
		t.Errorf("the resolved notice says an outage of %ds, want at least %s:\n%s", s, unreachableThreshold, resolved)
	}
	if l := alertsList(t, c); len(l.Open) != 0 || len(l.Resolved) != 1 || l.Resolved[0].Kind != "store_unreachable" || l.Resolved[0].Affected != 3 {
		t.Errorf("alerts API = %+v, want none open and one resolved store_unreachable for 3 posts", l)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := drillConn(t, ctx, pg.DSN(), "public")
	var rows, resolvedRows, openedEvents, resolvedEvents int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE resolved_at IS NOT NULL)
		FROM alerts WHERE kind = 'store_unreachable'`).Scan(&rows, &resolvedRows); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'alert.opened'), count(*) FILTER (WHERE kind = 'alert.resolved')
		FROM events`).Scan(&openedEvents, &resolvedEvents); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || resolvedRows != 1 || openedEvents != 1 || resolvedEvents != 1 {
		t.Errorf("store_unreachable rows %d (resolved %d), alert events opened %d resolved %d; want 1, 1, 1, 1",
			rows, resolvedRows, openedEvents, resolvedEvents)
	}
}
