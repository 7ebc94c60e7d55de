package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// drillFailover runs Caddy on a primary and a streaming replica through one
// multi-host DSN (target_session_attrs=read-write), kills the primary (-9) mid-load and
// promotes the replica, as a managed PostgreSQL fails over. Posts in the window are
// answered queued within the accept deadline, every acknowledged one is stored once on
// the new primary, and the deliveries whose leases were held on the old primary when it
// died are claimed again once those leases expire and are delivered.
//
// The replica is synchronous (synchronous_standby_names '*', as managed failover pairs
// are): with asynchronous replication a commit acknowledged by the old primary but not
// yet streamed is lost by any failover, whatever the application does.
func drillFailover(t *testing.T) {
	const n, rate = 400, 12
	primary := newPGCluster(t)
	replica := newPGReplica(t, primary)
	pgExec(t, primary.DSN(), `ALTER SYSTEM SET synchronous_standby_names = '*'`, `SELECT pg_reload_conf()`)
	if err := waitFor(30*time.Second, func() bool {
		return pgCount(primary.DSN(), `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'`) == 1
	}); err != nil {
		t.Fatalf("the replica never became synchronous: %v", err)
	}
	dsn := fmt.Sprintf("postgres://postgres@%s:%d,%s:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		primary.Host, primary.Port, replica.Host, replica.Port)
	hook := newReceiver(t)
	cf := strings.NewReplacer("{{DSN}}", dsn, "{{HOOK}}", hook.srv.URL).Replace(spoolCaddyfile)
	// A short lease bounds the drill: a lease held on the old primary is only taken over
	// once it expires (outbox/lease.go), 2 minutes by default.
	cf = strings.Replace(cf, "\t\t\tpoll_interval 500ms", "\t\t\tpoll_interval 500ms\n\t\t\tlease 10s", 1)
	c := newCaddy(t, caddyOpts{Caddyfile: cf})

	// Deliveries hang at the receiver when the primary dies, so the worker holds their
	// leases on it: those must be recovered on the new primary.
	load := newDrillLoad("failover", func() string { return c.URL("") }, drillAnswerBound)
	loadDone := load.start(t, c, n, rate, 0.2)
	hook.setHold(true)
	if err := waitFor(30*time.Second, func() bool {
		return pgCount(primary.DSN(), `SELECT count(*) FROM deliveries WHERE status = 'sending'`) > 0
	}); err != nil {
		t.Fatalf("no delivery in flight before the kill: %v", err)
	}
	leasedIDs := pgStrings(t, primary.DSN(), `SELECT id::text FROM deliveries WHERE status = 'sending'`)
	leased := len(leasedIDs)
	queuedBefore := load.queued.Load()
	primary.Kill()
	killed := time.Now()
	hook.setHold(false)
	// A failover takes its detection time: the window below includes these seconds.
	select {
	case <-time.After(5 * time.Second):
	case <-loadDone:
		t.Fatalf("the load ended before the promotion: make it longer")
	}
	replica.Promote()
	t.Logf("primary killed with %d leases held, replica promoted after %s", leased, time.Since(killed).Round(time.Millisecond))
	window := waitRecovered(t, c, load, killed, 60*time.Second)
	// The leases held on the old primary survive on the new one (synchronous replica) and
	// are claimed again once they expire.
	if err := waitFor(60*time.Second, func() bool {
		return pgCount(replica.DSN(), fmt.Sprintf(`SELECT count(*) FROM deliveries WHERE status = 'sent' AND id::text IN ('%s')`,
			strings.Join(leasedIDs, "','"))) == leased
	}); err != nil {
		t.Errorf("the deliveries leased on the old primary were not sent from the new one: %v", err)
	}
	leasesBack := time.Since(killed)
	<-loadDone
	t.Logf("load done %s after the kill", time.Since(killed).Round(time.Millisecond))
	load.check(t)

	res := pgDrillSettle(t, "failover", replica.DSN(), load, hook, n, 60*time.Second)
	res.RecoverySeconds = window
	spooled := load.queued.Load() - queuedBefore
	if spooled == 0 {
		t.Errorf("no post was answered queued in the failover window: the drill did not cut the database off")
	}
	code, _, status := postKeyed(t, c, "drill-failover-after")
	if code != http.StatusOK || status != "accepted" {
		t.Errorf("post after the failover: %d %q, want 200 accepted", code, status)
	}
	res.Notes = fmt.Sprintf("primary kill -9, replica promoted after 5 s; window %.1f s; %d answered queued; %d leases held on the old primary (lease 10 s) sent %.1f s after the kill; slowest answer %s",
		window, spooled, leased, leasesBack.Seconds(), load.slowest())
	publish(t, res)
}

// pgConn connects to dsn for the rest of the test.
func pgConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// pgStrings runs a query of one text column on dsn.
func pgStrings(t *testing.T, dsn, q string) []string {
	t.Helper()
	rows, err := pgConn(t, dsn).Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// pgExec runs statements on dsn, failing the test on an error.
func pgExec(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	conn := pgConn(t, dsn)
	for _, s := range stmts {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
