package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// flakyReceiver is three webhook endpoints that each misbehave on the first request for a
// webhook-id and answer 204 after: /slow answers after 25s (past the webhook provider's
// 15s timeout, providers/webhook), /hang reads the request and never answers, /reset
// resets the connection halfway through its answer. Each has read, so processed, the
// request before misbehaving: its retry is a duplicate send.
type flakyReceiver struct {
	srv *httptest.Server

	mu        sync.Mutex
	processed map[string]int // path+webhook-id -> requests read
	answered  map[string]int // path+webhook-id -> 204s written
	open      map[string]int // path -> first requests still open
}

func newFlakyReceiver(t *testing.T) *flakyReceiver {
	r := &flakyReceiver{processed: map[string]int{}, answered: map[string]int{}, open: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *flakyReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if _, err := io.ReadAll(req.Body); err != nil {
		return
	}
	key := req.URL.Path + " " + req.Header.Get("webhook-id")
	r.mu.Lock()
	r.processed[key]++
	first := r.processed[key] == 1
	if first {
		r.open[req.URL.Path]++
	}
	r.mu.Unlock()
	if first {
		defer func() {
			r.mu.Lock()
			r.open[req.URL.Path]--
			r.mu.Unlock()
		}()
		switch req.URL.Path {
		case "/slow":
			select {
			case <-time.After(25 * time.Second):
			case <-req.Context().Done():
				return
			}
		case "/hang":
			<-req.Context().Done()
			return
		case "/reset":
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: appl")
			_ = buf.Flush()
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close sends RST
			}
			conn.Close()
			return
		}
	}
	r.mu.Lock()
	r.answered[key]++
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *flakyReceiver) stillOpen(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.open[path]
}

func (r *flakyReceiver) totals() (distinct, processed, answered int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, n := range r.processed {
		distinct++
		processed += n
		answered += r.answered[k]
	}
	return
}

const slowProvidersCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: this drill checks slow sends by the retry schedule; e2e/park_test.go checks parking.
		park off
		storage postgres "{{DSN}}" {
			schema {{SCHEMA}}
		}
		worker {
			concurrency 16
			lease 3s
			poll_interval 500ms
		}
		retry {
			base 200ms
			max_delay 1s
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		field message required
		notify webhook {{HOOK}}/slow {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
		notify webhook {{HOOK}}/hang {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
		notify webhook {{HOOK}}/reset {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
}
`

// drillSlowProviders sends every submission to a webhook that answers after 25s, one
// that never answers and one that resets mid-answer. Each first try is classified
// ambiguous (the request was written), the 3s lease is renewed through the 15s timeout so
// nobody else sends meanwhile, and every delivery ends sent: none is left in sending.
func drillSlowProviders(t *testing.T) {
	pc := storetest.NewPostgresSchemaName(t)
	recv := newFlakyReceiver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	caddy := newCaddy(t, caddyOpts{Caddyfile: strings.NewReplacer("{{DSN}}", pc.DSN, "{{SCHEMA}}", pc.Schema,
		"{{HOOK}}", recv.srv.URL).Replace(slowProvidersCaddyfile)})
	conn := drillConn(t, ctx, pc.DSN, pc.Schema)

	const n = 3
	start := time.Now()
	for i := range n {
		if err := submit(ctx, []*caddyProc{caddy}, 0, fmt.Sprintf("slow-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitFor(20*time.Second, func() bool { return recv.stillOpen("/slow") == n && recv.stillOpen("/hang") == n }); err != nil {
		t.Fatalf("the slow and hanging sends never were all in flight (%d slow, %d hanging): %v\n%s",
			recv.stillOpen("/slow"), recv.stillOpen("/hang"), err, caddy.Log())
	}
	// The worker renews a lease every third of its length while the send runs: each slow
	// or hanging send, still open, keeps its one claim and sees its lease moved past the
	// claim's 3s (updated_at is the claim's time; renewals move only locked_until).
	var renewed int
	if err := waitFor(10*time.Second, func() bool {
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE status = 'sending' AND attempts = 1
			AND (recipient LIKE '%/slow' OR recipient LIKE '%/hang')
			AND locked_until > updated_at + interval '3500 milliseconds'`).Scan(&renewed); err != nil {
			t.Fatal(err)
		}
		return renewed == 2*n
	}); err != nil || recv.stillOpen("/slow") != n || recv.stillOpen("/hang") != n {
		t.Fatalf("%d of %d leases renewed while their sends were open (%d slow, %d hanging still open): %v",
			renewed, 2*n, recv.stillOpen("/slow"), recv.stillOpen("/hang"), err)
	}
	if err := waitFor(60*time.Second, func() bool { return queryDeliveries(t, conn).sent == 3*n }); err != nil {
		t.Fatalf("deliveries %+v: %v\n%s", queryDeliveries(t, conn), err, caddy.Log())
	}
	recovery := time.Since(start)
	if d := queryDeliveries(t, conn); d.statuses["sending"] != 0 || d.total != 3*n {
		t.Fatalf("deliveries %+v: want all %d sent, none in sending", d, 3*n)
	}

	rows, err := conn.Query(ctx, `SELECT d.recipient, a.attempt, a.outcome, COALESCE(a.error_code, '')
		FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id ORDER BY d.recipient, d.id, a.attempt`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ambiguous := 0
	got := map[string]int{}
	for rows.Next() {
		var recipient, outcome, code string
		var attempt int
		if err := rows.Scan(&recipient, &attempt, &outcome, &code); err != nil {
			t.Fatal(err)
		}
		kind := recipient[strings.LastIndex(recipient, "/")+1:]
		got[fmt.Sprintf("%s #%d %s %s", kind, attempt, outcome, code)]++
		if outcome == "ambiguous" {
			ambiguous++
		}
	}
	rows.Close()
	for _, want := range []string{"slow #1 ambiguous timeout", "hang #1 ambiguous timeout", "reset #1 ambiguous network",
		"slow #2 sent ", "hang #2 sent ", "reset #2 sent "} {
		if got[want] != n {
			t.Errorf("%d attempts %q, want %d; all: %v", got[want], want, n, got)
		}
	}
	var subs, keys int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT idempotency_key) FROM submissions`).Scan(&subs, &keys); err != nil {
		t.Fatal(err)
	}
	distinct, processed, answered := recv.totals()
	if subs != n || keys != n || distinct != 3*n || answered != 3*n || processed-distinct > ambiguous {
		t.Fatalf("%d submissions (%d keys); receiver: %d distinct, %d processed, %d answered; %d ambiguous attempts",
			subs, keys, distinct, processed, answered, ambiguous)
	}
	publish(t, drillResult{
		Drill: "slow_providers", Submissions: n, Acknowledged: n, Lost: 3*n - answered, DuplicateSubmissions: subs - keys,
		DuplicateSends: processed - distinct, AmbiguousAttempts: ambiguous, RecoverySeconds: recovery.Seconds(),
		Notes: "Each submission goes to three webhooks that misbehave on their first request: an answer after 25s (past the " +
			"webhook provider's fixed 15s timeout), no answer at all, a connection reset mid-answer. Each first try is recorded " +
			"ambiguous, leases (3s) are renewed through the wait, each retry is sent; recovery is from the first post to the last " +
			"delivery sent.",
	})
}
