package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// spoolCaddyfile is one Caddy on a throwaway PostgreSQL with the default spool (under
// the data dir) and a quick replay: a short poll makes the worker deliver soon after.
const spoolCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: these tests check the spool and retries; e2e/park_test.go checks parking.
		park off
		storage postgres "{{DSN}}"
		worker {
			poll_interval 500ms
			shutdown_grace 1s
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
		notify webhook {{HOOK}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
}
`

// postKeyed posts one JSON submission with an idempotency key and returns the status
// code and the JSON answer's id and status.
func postKeyed(t *testing.T, p *caddyProc, key string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.URL("/contact"),
		strings.NewReader(fmt.Sprintf(`{"message":"hello %s"}`, key)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, body := do(t, req)
	var a struct{ ID, Status string }
	json.Unmarshal([]byte(body), &a)
	return resp.StatusCode, a.ID, a.Status
}

// newSpoolCaddy starts a Caddy of spoolCaddyfile on a throwaway PostgreSQL, with the
// webhook receiver every submission notifies.
func newSpoolCaddy(t *testing.T) (*pgCluster, *receiver, *caddyProc) {
	t.Helper()
	pg := newPGCluster(t)
	hook := newReceiver(t)
	cf := strings.NewReplacer("{{DSN}}", pg.DSN(), "{{HOOK}}", hook.srv.URL).Replace(spoolCaddyfile)
	return pg, hook, newCaddy(t, caddyOpts{Caddyfile: cf})
}

// storedIDs reads every submission id in the database; nil while it is unreachable.
func storedIDs(dsn string) map[string]bool {
	statuses := storedStatuses(dsn)
	if statuses == nil {
		return nil
	}
	out := map[string]bool{}
	for id := range statuses {
		out[id] = true
	}
	return out
}

// allStored is a waitFor condition: every id answered (the keys) is in the database.
func allStored(dsn string, answered map[string]string) func() bool {
	return func() bool {
		ids := storedIDs(dsn)
		for id := range answered {
			if !ids[id] {
				return false
			}
		}
		return true
	}
}

// storedStatuses reads every submission's id and status; nil while the database is
// unreachable.
func storedStatuses(dsn string) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id::text, status FROM submissions`)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	var id, status string
	if _, err := pgx.ForEachRow(rows, []any{&id, &status}, func() error { out[id] = status; return nil }); err != nil {
		return nil
	}
	return out
}

// With PostgreSQL down, posts are answered "queued" from the spool, Caddy restarts
// (kill -9) and comes up without the database, and once PostgreSQL is back every
// answered submission is stored and delivered.
func TestQueuedWhilePostgresIsDownThenStored(t *testing.T) {
	t.Parallel()
	pg, hook, c := newSpoolCaddy(t)

	answered := map[string]string{} // id -> answered status
	// Every answer names a submission of its own: a missing or repeated id would shrink
	// answered and let the counts below agree with fewer submissions than were posted.
	addAnswered := func(id, status string) {
		t.Helper()
		if _, seen := answered[id]; id == "" || seen {
			t.Fatalf("post answered %q with id %q, already answered or empty", status, id)
		}
		answered[id] = status
	}
	for i := 0; i < 3; i++ {
		code, id, status := postKeyed(t, c, fmt.Sprintf("up-%d", i))
		if code != http.StatusOK || status != "accepted" {
			t.Fatalf("post with the database up: %d %q", code, status)
		}
		addAnswered(id, status)
	}

	pg.Kill()
	post := func(prefix string, n int) {
		for i := 0; i < n; i++ {
			code, id, status := postKeyed(t, c, fmt.Sprintf("%s-%d", prefix, i))
			if code != http.StatusOK || status != "queued" {
				t.Fatalf("post with the database down: %d %q, want 200 queued\n%s", code, status, c.Log())
			}
			addAnswered(id, status)
		}
	}
	post("down", 5)

	// A crash while the database is still down: the restart must come up and keep spooling.
	c.Kill()
	c.Restart()
	post("after-restart", 2)

	pg.Start()
	if err := waitFor(60*time.Second, allStored(pg.DSN(), answered)); err != nil {
		t.Fatalf("answered submissions not all stored after PostgreSQL came back: %v\n%s", err, c.Log())
	}
	if ids := storedIDs(pg.DSN()); len(ids) != len(answered) {
		t.Fatalf("%d submissions stored, %d answered", len(ids), len(answered))
	}
	if err := waitFor(60*time.Second, func() bool {
		distinct, _, _ := hook.counts()
		return distinct == len(answered)
	}); err != nil {
		distinct, _, _ := hook.counts()
		t.Fatalf("webhooks delivered for %d of %d submissions", distinct, len(answered))
	}
}
