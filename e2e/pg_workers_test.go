package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// receiver is a fake webhook endpoint. It counts a delivery only when it answers 2xx, the
// moment the sender learns of success. In hold mode it keeps requests open until released
// or until the sender goes away (its connection closes), which is how a send in flight
// looks when its process is killed.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	got      map[string]int // webhook-id -> 2xx answers
	inflight map[string]int // webhook-id -> requests held open now
	hold     bool
	released chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{got: map[string]int{}, inflight: map[string]int{}, released: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		// A test that failed while holding must not hang in Close.
		r.mu.Lock()
		if r.hold {
			r.hold = false
			close(r.released)
		}
		r.mu.Unlock()
		r.srv.Close()
	})
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	// Read the body first: only then does net/http watch the connection and cancel the
	// request's context when the sender goes away.
	if _, err := io.ReadAll(req.Body); err != nil {
		return
	}
	id := req.Header.Get("webhook-id")
	if id == "" || req.Header.Get("webhook-signature") == "" {
		http.Error(w, "unsigned", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	hold, released := r.hold, r.released
	if hold {
		r.inflight[id]++
	}
	r.mu.Unlock()
	if hold {
		select {
		case <-released:
		case <-req.Context().Done():
		}
		r.mu.Lock()
		if r.inflight[id]--; r.inflight[id] == 0 {
			delete(r.inflight, id)
		}
		r.mu.Unlock()
		if req.Context().Err() != nil {
			return // the sender went away: no answer, so not delivered
		}
	}
	r.mu.Lock()
	r.got[id]++
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) setHold(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		r.hold, r.released = true, make(chan struct{})
		return
	}
	r.hold = false
	close(r.released)
}

// holding reports whether every id has a request held open (want true) or none has
// (want false).
func (r *receiver) holding(ids []string, want bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if (r.inflight[id] > 0) != want {
			return false
		}
	}
	return true
}

func (r *receiver) counts() (distinct, total int, dups []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, n := range r.got {
		distinct++
		total += n
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s x%d", id, n))
		}
	}
	return
}

const pgWorkerCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: these tests check workers and retries; e2e/park_test.go checks parking.
		park off
		storage postgres "{{DSN}}" {
			schema {{SCHEMA}}
		}
		worker {
			concurrency 8
			lease 3s
			poll_interval {{POLL}}
			shutdown_grace 2s
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

func pgCaddyfile(dsn, schema, hook, poll string) string {
	return strings.NewReplacer("{{DSN}}", dsn, "{{SCHEMA}}", schema, "{{HOOK}}", hook, "{{POLL}}", poll).Replace(pgWorkerCaddyfile)
}

// submit posts one JSON submission with its idempotency key, retrying on another
// instance when the answer does not come, as a browser with a retrying fetch would.
func submit(ctx context.Context, targets []*caddyProc, first int, key string) error {
	var last error
	for try := 0; try < 20; try++ {
		p := targets[(first+try)%len(targets)]
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL("/contact"),
			strings.NewReader(fmt.Sprintf(`{"message":"load %s"}`, key)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := noRedirect.Do(req)
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("status %d", resp.StatusCode)
	}
	return fmt.Errorf("submission %s: %w", key, last)
}

type pgDeliveries struct {
	total, sent int
	statuses    map[string]int
}

func queryDeliveries(t *testing.T, conn *pgx.Conn) pgDeliveries {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, `SELECT status, count(*) FROM deliveries GROUP BY status`)
	if err != nil {
		t.Fatalf("count deliveries: %v", err)
	}
	defer rows.Close()
	out := pgDeliveries{statuses: map[string]int{}}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatalf("scan: %v", err)
		}
		out.statuses[s] = n
		out.total += n
		if s == "sent" {
			out.sent = n
		}
	}
	return out
}

// TestPostgresTwoInstancesExactlyOnce runs two Caddy processes on one PostgreSQL outbox:
// 1,000 submissions spread over both, a `caddy reload` of one in the middle, each
// delivered exactly once; then a kill -9 of one while it holds leases, after which the
// other completes its deliveries once the leases expire.
func TestPostgresTwoInstancesExactlyOnce(t *testing.T) {
	t.Parallel()
	pc := storetest.NewPostgresSchemaName(t)
	recv := newReceiver(t)
	hook := recv.srv.URL + "/hook"

	a := newCaddy(t, caddyOpts{Caddyfile: pgCaddyfile(pc.DSN, pc.Schema, hook, "500ms")})
	b := newCaddy(t, caddyOpts{Caddyfile: pgCaddyfile(pc.DSN, pc.Schema, hook, "500ms")})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	connCfg, err := pgx.ParseConfig(pc.DSN)
	if err != nil {
		t.Fatal(err)
	}
	connCfg.RuntimeParams["search_path"] = pc.Schema
	conn, err := pgx.ConnectConfig(ctx, connCfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())

	// Phase 1: 1,000 submissions over both instances, with a reload of A halfway.
	const n = 1000
	var next atomic.Int64
	var reloaded sync.Once
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if i == n/2 {
					reloaded.Do(func() { a.Reload(pgCaddyfile(pc.DSN, pc.Schema, hook, "700ms")) })
				}
				if err := submit(ctx, []*caddyProc{a, b}, i%2, fmt.Sprintf("p1-%04d", i)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("phase 1: %v", err)
	}
	if err := waitFor(90*time.Second, func() bool {
		d, _, _ := recv.counts()
		return d >= n && queryDeliveries(t, conn).sent == n
	}); err != nil {
		d, total, _ := recv.counts()
		t.Fatalf("phase 1: receiver has %d distinct (%d total), database %+v: %v\nA:\n%s\nB:\n%s",
			d, total, queryDeliveries(t, conn), err, a.Log(), b.Log())
	}
	if d, total, dups := recv.counts(); d != n || total != n {
		t.Fatalf("phase 1: receiver got %d distinct deliveries in %d requests, want %d exactly once; duplicates: %v", d, total, n, dups)
	}
	var subs int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM submissions`).Scan(&subs); err != nil || subs != n {
		t.Fatalf("phase 1: %d submissions (%v), want %d", subs, err, n)
	}

	// Phase 2: B takes deliveries while the receiver holds every request open; B is killed
	// with leases held; A must complete them after the lease (3s) expires.
	recv.setHold(true)
	const m = 40
	for i := 0; i < m; i++ {
		if err := submit(ctx, []*caddyProc{b}, 0, fmt.Sprintf("p2-%04d", i)); err != nil {
			t.Fatalf("phase 2: %v", err)
		}
	}
	ownerB := fmt.Sprintf("%%-%d-%%", b.cmd.Process.Pid)
	leasedByB := func() []string {
		rows, err := conn.Query(ctx, `SELECT id::text FROM deliveries WHERE status = 'sending' AND lease_owner LIKE $1`, ownerB)
		if err != nil {
			t.Fatalf("leases of B: %v", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("leases of B: %v", err)
		}
		return ids
	}
	// Wait until B has sends in flight: leases held and their requests open at the receiver.
	if err := waitFor(30*time.Second, func() bool {
		ids := leasedByB()
		return len(ids) > 0 && recv.holding(ids, true)
	}); err != nil {
		t.Fatalf("phase 2: B never had a send in flight: %v\nB:\n%s", err, b.Log())
	}
	b.Kill()
	heldByB := leasedByB()
	if len(heldByB) == 0 {
		t.Fatalf("phase 2: no lease of B left after kill -9; the takeover below would check nothing")
	}
	// Let the receiver notice B's connections closing before it answers anything, so
	// that none of B's unfinished sends counts as delivered.
	if err := waitFor(10*time.Second, func() bool { return recv.holding(heldByB, false) }); err != nil {
		t.Fatalf("phase 2: B's requests still open after kill -9: %v", err)
	}
	recv.setHold(false)
	if err := waitFor(90*time.Second, func() bool {
		d, _, _ := recv.counts()
		return d >= n+m && queryDeliveries(t, conn).sent == n+m
	}); err != nil {
		d, total, _ := recv.counts()
		t.Fatalf("phase 2: receiver has %d distinct (%d total), database %+v: %v\nA:\n%s", d, total, queryDeliveries(t, conn), err, a.Log())
	}
	if d, total, dups := recv.counts(); d != n+m || total != n+m {
		t.Fatalf("phase 2: receiver got %d distinct deliveries in %d requests, want %d exactly once; duplicates: %v", d, total, n+m, dups)
	}
	// The deliveries B held were finished by A: sent, B's unfinished try charged
	// (attempts 2) but no attempt row written by B: the one row is A's try, number 2.
	for _, id := range heldByB {
		var status, outcome string
		var attempts, rows, attempt int
		if err := conn.QueryRow(ctx, `SELECT status, attempts, (SELECT count(*) FROM delivery_attempts WHERE delivery_id = d.id),
			COALESCE((SELECT max(attempt) FROM delivery_attempts WHERE delivery_id = d.id), 0),
			COALESCE((SELECT min(outcome) FROM delivery_attempts WHERE delivery_id = d.id), '')
			FROM deliveries d WHERE id = $1::uuid`, id).Scan(&status, &attempts, &rows, &attempt, &outcome); err != nil {
			t.Fatalf("delivery %s: %v", id, err)
		}
		if status != "sent" || attempts != 2 || rows != 1 || attempt != 2 || outcome != "sent" {
			t.Errorf("delivery %s held by B: status=%s attempts=%d attempt rows=%d (last #%d %q), want sent after 2 claims and 1 recorded try, #2 sent, by A",
				id, status, attempts, rows, attempt, outcome)
		}
	}
}
