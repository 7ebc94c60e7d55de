package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/internal/drills"
)

// The drills (docs/drills.md) run in two chains, each one drill after another and each
// chain as one of the parallel e2e tests: their bounds (answers within the accept
// deadline, nothing lost or sent twice, recovery within a minute, a paced drain within
// 15% of its rate) hold beside the other tests' load, and running them there rather than
// alone takes minutes off the suite. One drill: go test ./e2e -run TestDrill/Partition
// (the pattern matches both chains' names).

// TestDrill: the database and its network fail (partition, failover, a paused worker,
// skewed clocks).
func TestDrill(t *testing.T) {
	t.Parallel()
	runDrills(t, []namedDrill{
		{"Partition", drillPartition},
		{"Failover", drillFailover},
		{"Zombie", drillZombie},
		{"ClockSkew", drillClockSkew},
	})
}

// TestDrillLimits: limits are reached (providers' rates, full disks, slow providers).
func TestDrillLimits(t *testing.T) {
	t.Parallel()
	runDrills(t, []namedDrill{
		{"RateLimits", drillRateLimits},
		{"DiskFullSpool", drillDiskFullSpool},
		{"SlowProviders", drillSlowProviders},
		{"DiskFullSQLite", drillDiskFullSQLite},
	})
}

type namedDrill struct {
	name string
	run  func(*testing.T)
}

// runDrills runs ds one after another.
func runDrills(t *testing.T, ds []namedDrill) {
	for _, d := range ds {
		t.Run(d.name, d.run)
	}
}

// drillResult is the figures one drill publishes (internal/drills).
type drillResult = drills.Result

// publish logs the figures, fails the test on any lost or duplicated submission and, when
// EnvDrillResults is set, writes them for scripts/drills.
func publish(t *testing.T, r drillResult) {
	t.Helper()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatalf("encode drill result: %v", err)
	}
	t.Logf("drill figures:\n%s", b)
	if r.Lost != 0 {
		t.Errorf("%d acknowledged submissions lost", r.Lost)
	}
	if r.DuplicateSubmissions != 0 {
		t.Errorf("%d duplicate submissions", r.DuplicateSubmissions)
	}
	// A send is repeated only after an attempt whose outcome nobody could record.
	if r.DuplicateSends > r.AmbiguousAttempts {
		t.Errorf("%d duplicate sends but only %d ambiguous attempts", r.DuplicateSends, r.AmbiguousAttempts)
	}
	if dir := os.Getenv(drills.EnvResults); dir != "" {
		if err := r.Write(dir); err != nil {
			t.Fatal(err)
		}
	}
}

// drillAnswer is what the last attempt of one submission got.
type drillAnswer struct {
	Code       int
	Status     string // "accepted" or "queued" on a 200
	RetryAfter string
}

// drillLoad posts paced submissions, each with its own idempotency key, and retries a key
// after any answer but 200 (as a browser's retrying fetch does), so an unanswered or 503
// submission is tried again with the same key. It records every answer's latency and
// every answer that breaks the contract (neither 200 nor 503 with Retry-After).
type drillLoad struct {
	name   string
	target func() string

	mu       sync.Mutex
	acked    map[string]string // key -> "accepted" or "queued"
	maxLat   time.Duration
	slow     []string // answers slower than the bound
	bad      []string // answers that break the contract
	bound    time.Duration
	last     string    // the status of the latest acknowledgement
	lastAt   time.Time // when it came
	answered atomic.Int64
	queued   atomic.Int64
	refused  atomic.Int64 // 503 with Retry-After
	attempts atomic.Int64
}

func newDrillLoad(name string, target func() string, bound time.Duration) *drillLoad {
	return &drillLoad{name: name, target: target, acked: map[string]string{}, bound: bound}
}

// run posts n submissions at rate per second from 8 clients until all are acknowledged
// or ctx ends; it returns when every client is done.
func (l *drillLoad) run(ctx context.Context, n, rate int) {
	keys := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				l.post(ctx, k)
			}
		}()
	}
	pace := time.NewTicker(time.Second / time.Duration(rate))
	defer pace.Stop()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		<-pace.C
		keys <- fmt.Sprintf("drill-%s-%05d", l.name, i)
	}
	close(keys)
	wg.Wait()
}

// start runs the load in the background (bounded by 3 minutes) and waits until frac of
// it is answered; the returned channel closes when the load is done.
func (l *drillLoad) start(t *testing.T, c *caddyProc, n, rate int, frac float64) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	done := make(chan struct{})
	go func() { l.run(ctx, n, rate); close(done) }()
	if err := waitFor(60*time.Second, func() bool { return float64(l.answered.Load()) >= frac*float64(n) }); err != nil {
		t.Fatalf("load did not start: %v\n%s", err, tail(c.Log(), 4000))
	}
	return done
}

func (l *drillLoad) post(ctx context.Context, key string) {
	// The client timeout is far above the bound: a hung answer is measured, not cut short.
	cl := &http.Client{Timeout: 60 * time.Second}
	for ctx.Err() == nil {
		req := keyedJSONPost(ctx, l.target()+"/contact", "drill "+key, key)
		l.attempts.Add(1)
		start := time.Now()
		resp, err := cl.Do(req)
		lat := time.Since(start)
		a := drillAnswer{}
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			a.Code, a.RetryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
			if strings.Contains(string(body), `"queued"`) {
				a.Status = "queued"
			} else if strings.Contains(string(body), `"accepted"`) {
				a.Status = "accepted"
			}
		}
		l.record(key, a, err, lat)
		if a.Code == http.StatusOK {
			return
		}
		select { // back off a little, as a browser would
		case <-ctx.Done():
		case <-time.After(time.Duration(100+rand.IntN(200)) * time.Millisecond):
		}
	}
}

func (l *drillLoad) record(key string, a drillAnswer, err error, lat time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.maxLat = max(l.maxLat, lat)
		l.answered.Add(1)
		if lat > l.bound {
			l.slow = append(l.slow, fmt.Sprintf("%s: %d after %s", key, a.Code, lat.Round(time.Millisecond)))
		}
	}
	switch {
	case err != nil:
		l.bad = append(l.bad, fmt.Sprintf("%s: no answer after %s: %v", key, lat.Round(time.Millisecond), err))
	case a.Code == http.StatusOK && a.Status != "":
		l.acked[key] = a.Status
		l.last, l.lastAt = a.Status, time.Now()
		if a.Status == "queued" {
			l.queued.Add(1)
		}
	case a.Code == http.StatusServiceUnavailable && a.RetryAfter != "":
		l.refused.Add(1)
	default:
		l.bad = append(l.bad, fmt.Sprintf("%s: answered %d (status %q, Retry-After %q)", key, a.Code, a.Status, a.RetryAfter))
	}
}

// check fails the test on answers that broke the contract or the latency bound.
func (l *drillLoad) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bad) > 0 {
		t.Errorf("%d answers broke the contract, e.g. %s", len(l.bad), strings.Join(l.bad[:min(5, len(l.bad))], "; "))
	}
	if len(l.slow) > 0 {
		t.Errorf("%d answers slower than %s, e.g. %s", len(l.slow), l.bound, strings.Join(l.slow[:min(5, len(l.slow))], "; "))
	}
}

// slowest is the longest any answer took.
func (l *drillLoad) slowest() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxLat.Round(time.Millisecond)
}

// waitRecovered waits until Caddy acknowledges posts straight into the database again
// (the latest acknowledgement, one after since, says accepted) and its spool is empty,
// and returns how long that took after since: the drills' recovery time.
func waitRecovered(t *testing.T, c *caddyProc, l *drillLoad, since time.Time, within time.Duration) float64 {
	t.Helper()
	err := waitFor(within, func() bool {
		l.mu.Lock()
		last, at := l.last, l.lastAt
		l.mu.Unlock()
		var h struct {
			Spool *struct{ Depth int64 }
		}
		code, body := c.admin(t, http.MethodGet, "/form_outbox/health")
		if json.Unmarshal([]byte(body), &h) != nil || h.Spool == nil {
			t.Fatalf("health %d without a spool part: %s", code, body)
		}
		return last == "accepted" && at.After(since) && h.Spool.Depth == 0
	})
	if err != nil {
		t.Errorf("not recovered: %v\n%s", err, tail(c.Log(), 4000))
	}
	return time.Since(since).Seconds()
}

// ackedKeys is a copy of the acknowledged keys.
func (l *drillLoad) ackedKeys() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.acked))
	for k, v := range l.acked {
		out[k] = v
	}
	return out
}

// storedKeyCounts counts the stored submissions per idempotency key.
func storedKeyCounts(keys []string) map[string]int {
	out := map[string]int{}
	for _, k := range keys {
		out[k]++
	}
	return out
}

// lostAndDuplicated compares the acknowledged keys with the stored ones.
func lostAndDuplicated(acked map[string]string, stored map[string]int) (lost, dup int) {
	for k := range acked {
		if stored[k] == 0 {
			lost++
		}
	}
	for _, v := range stored {
		dup += max(v-1, 0)
	}
	return lost, dup
}

// pgKeys reads every stored submission's idempotency key; an error while the database is
// unreachable.
func pgKeys(ctx context.Context, dsn string) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT idempotency_key FROM submissions`)
	if err != nil {
		return nil, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	return storedKeyCounts(keys), nil
}

// pgCount runs one count query; -1 while the database is unreachable.
func pgCount(dsn, q string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return -1
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
		return -1
	}
	return n
}

// ambiguousAttemptsQuery counts the attempts whose outcome is unknown: those recorded
// ambiguous, and those charged at claim with no attempt row, whose process died or lost
// its database mid-send. Only these may have sent twice.
const ambiguousAttemptsQuery = `SELECT (SELECT count(*) FROM delivery_attempts WHERE outcome = 'ambiguous') +
	coalesce((SELECT sum(d.attempts - (SELECT count(*) FROM delivery_attempts a WHERE a.delivery_id = d.id)) FROM deliveries d), 0)`

// pgDrillSettle waits (up to within) until every acknowledged submission is stored in the
// database at dsn and every stored one was delivered to hook and settled, and returns the
// drill's figures.
func pgDrillSettle(t *testing.T, name, dsn string, load *drillLoad, hook *receiver, n int, within time.Duration) drillResult {
	t.Helper()
	acked := load.ackedKeys()
	var stored map[string]int
	start := time.Now()
	defer func() { t.Logf("settled in %s", time.Since(start).Round(time.Millisecond)) }()
	err := waitFor(within, func() bool {
		var err error
		if stored, err = pgKeys(context.Background(), dsn); err != nil {
			return false
		}
		if lost, _ := lostAndDuplicated(acked, stored); lost > 0 {
			return false
		}
		distinct, _, _ := hook.counts()
		if distinct < len(stored) || pgCount(dsn, `SELECT count(*) FROM deliveries WHERE status <> 'sent'`) != 0 {
			return false
		}
		return true
	})
	if err != nil {
		distinct, _, _ := hook.counts()
		t.Errorf("not settled: %v (acknowledged %d, stored %d, delivered %d, unsent deliveries %d)", err,
			len(acked), len(stored), distinct, pgCount(dsn, `SELECT count(*) FROM deliveries WHERE status <> 'sent'`))
	}
	lost, dup := lostAndDuplicated(acked, stored)
	distinct, total, _ := hook.counts()
	return drillResult{
		Drill: name, Submissions: n, Acknowledged: len(acked), Lost: lost, DuplicateSubmissions: dup,
		DuplicateSends:    total - distinct,
		AmbiguousAttempts: max(pgCount(dsn, ambiguousAttemptsQuery), 0),
	}
}
