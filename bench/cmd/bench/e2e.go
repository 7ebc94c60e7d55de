package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
)

// The end-to-end Caddyfile: the configuration users run, worker on with its defaults.
// /contact routes every submission to two webhooks served by the receiver, /mail to two
// e-mail recipients through the development file provider. The PostgreSQL DSN carries
// application_name=bench_e2e so that the backends serving this Caddy can be told apart
// from the bench's own (their CPU is read from /proc).
const e2eCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	storage file_system {{DIR}}/caddy
	form_outbox {
		storage {{STORAGE}}
		{{WORKER}}
		email {
			from "Bench <bench@example.com>"
			file {{DIR}}/mail
		}
	}
}
http://127.0.0.1:{{PORT}} {
	form_outbox /contact {
		form contact
		field message required
		notify webhook http://127.0.0.1:{{RECV}}/a
		notify webhook http://127.0.0.1:{{RECV}}/b
	}
	form_outbox /mail {
		form mail
		field message required
		notify email a@example.com b@example.com
	}
	respond /ceiling "ok" 200
}
`

// The webhook receiver: a plain Caddy answering 200 to every request on loopback, the
// cheapest HTTP server at hand that is also a real one (keep-alive, HTTP/1.1 parsing as
// any receiver does). It runs in a process of its own so its CPU is reported apart.
const receiverCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	storage file_system {{DIR}}/caddy
}
http://127.0.0.1:{{PORT}} {
	respond 200
}
`

const e2eApp = "bench_e2e"

// The worker defaults before issue 21 (concurrency 8, batch 25), run side by side with
// the defaults as they are.
const (
	e2eOldApp    = "bench_e2e_old"
	e2eOldWorker = "concurrency 8;batch 25"
	e2eOldTarget = "webhook, concurrency 8, batch 25 (old defaults)"
)

// e2ePoint is one end-to-end point: intake load for cfg.dur with the worker on, then the
// wait until the worker has caught up with it.
type e2ePoint struct {
	storage, target string // postgres|sqlite, webhook|file
	conns           int
	p               point   // intake: accepted/s, latency, answers
	delivered       float64 // submissions delivered per second during the load (sent deliveries / 2)
	// backlogStart and backlogEnd are the deliveries not yet sent when the load began and
	// ended; drain is how long the worker took after the load to bring it back to start.
	backlogStart, backlogEnd int64
	drain                    time.Duration
	drained                  bool
	// CPU over the load and the drain: the Caddy under test, the PostgreSQL backends
	// serving it, the webhook receiver.
	cpuCaddy, cpuPG, cpuRecv time.Duration
	// pgActive: PostgreSQL backends found running each statement, sampled every 100 ms.
	pgActive map[string]int
}

// perSubmission is the CPU one submission cost end to end: Caddy and its PostgreSQL
// backends, from the load's start to the end of the drain, over the submissions answered.
func (e e2ePoint) perSubmission() time.Duration {
	if e.p.answered == 0 {
		return 0
	}
	return (e.cpuCaddy + e.cpuPG) / time.Duration(e.p.answered)
}

// e2eStore is what a point reads of the store under test: deliveries not yet sent, and
// deliveries sent.
type e2eStore func(context.Context) (backlog, sent int64, err error)

func pgCounts(dsn, schema string) e2eStore {
	return func(ctx context.Context) (int64, int64, error) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return 0, 0, err
		}
		defer conn.Close(ctx)
		var backlog, sent int64
		err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status IN ('pending', 'failed', 'sending')),
			count(*) FILTER (WHERE status = 'sent') FROM `+pgx.Identifier{schema, "deliveries"}.Sanitize()).Scan(&backlog, &sent)
		return backlog, sent, err
	}
}

func sqliteCounts(path string) e2eStore {
	return func(ctx context.Context) (int64, int64, error) {
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
		if err != nil {
			return 0, 0, err
		}
		defer db.Close()
		var backlog, sent int64
		err = db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE status IN ('pending', 'failed', 'sending')),
			count(*) FILTER (WHERE status = 'sent') FROM deliveries`).Scan(&backlog, &sent)
		return backlog, sent, err
	}
}

// benchE2E measures the configuration users run: a built Caddy with the worker on, each
// submission routed to two webhooks (and, for the file provider's rate, to two e-mail
// recipients), accepted/s and delivered/s side by side, against pgbench's per-request
// transaction in the same run.
func benchE2E(ctx context.Context, cfg *config, r *report) error {
	const pgSchema, pgbenchSchema, oldSchema = "bench_e2e", "bench_e2e_pgbench", "bench_e2e_old"
	schemas := []string{pgSchema, pgbenchSchema, oldSchema}
	for _, s := range schemas {
		if err := dropSchema(ctx, cfg.dsn, s); err != nil {
			return err
		}
	}
	defer func() {
		for _, s := range schemas {
			_ = dropSchema(context.Background(), cfg.dsn, s)
		}
	}()
	pgb, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn, Schema: pgbenchSchema})
	if err != nil {
		return err
	}
	pgb.Close()

	recv, err := startCaddyfile(cfg, "receiver", receiverCaddyfile, strings.NewReplacer())
	if err != nil {
		return err
	}
	defer recv.stop()
	// pgStorage is the storage line of a PostgreSQL Caddy whose backends carry app.
	pgStorage := func(app, schema string) string {
		sep := "?"
		if strings.Contains(cfg.dsn, "?") {
			sep = "&"
		}
		dsn := cfg.dsn + sep + "application_name=" + app
		if cfg.e2eDSN != "" {
			dsn += "&" + cfg.e2eDSN
		}
		return fmt.Sprintf("postgres %q {\n\t\t\tschema %s\n\t\t}", dsn, schema)
	}
	more := func(storage, worker string) *strings.Replacer {
		if worker != "" {
			worker = "worker {\n\t\t\t" + strings.ReplaceAll(worker, ";", "\n\t\t\t") + "\n\t\t}"
		}
		return strings.NewReplacer("{{STORAGE}}", storage, "{{RECV}}", strconv.Itoa(recv.port), "{{WORKER}}", worker)
	}
	var procs []*caddyProc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	start := func(name, storage, worker string) (*caddyProc, error) {
		p, err := startCaddyfile(cfg, name, e2eCaddyfile, more(storage, worker))
		if err == nil {
			procs = append(procs, p)
		}
		return p, err
	}
	pgCaddy, err := start("e2e-pg", pgStorage(e2eApp, pgSchema), cfg.e2eWorker)
	if err != nil {
		return err
	}
	// The same on the worker defaults before issue 21, for the ratio in the same run.
	oldCaddy, err := start("e2e-pg-old", pgStorage(e2eOldApp, oldSchema), e2eOldWorker)
	if err != nil {
		return err
	}
	sqPath := filepath.Join(cfg.tmp, "e2e-sqlite", "outbox.db")
	sqCaddy, err := start("e2e-sqlite", "sqlite "+sqPath, cfg.e2eWorker)
	if err != nil {
		return err
	}
	if err := warmUp(procs...); err != nil {
		return err
	}
	// A first load on each Caddy, not measured: on fresh tables PostgreSQL plans the
	// store's statements from the statistics of a table of one row, and those plans
	// stay until the next ANALYZE (autovacuum's comes after a minute), so without it
	// the first point measured a new install's first minute (PostgreSQL CPU per
	// submission 2-4x the later points'). settle, before each point, analyzes.
	for _, p := range procs {
		if _, err := load(cfg, p.url("/contact"), 32, e2eWarmUp, true); err != nil {
			return err
		}
	}

	settle(ctx, cfg.dsn, schemas)
	logf("e2e: pgbench at 32 connections")
	pb, cpu, err := pgbenchCPU(ctx, cfg, pgbenchSchema, 32)
	if err != nil {
		return err
	}
	r.e2ePgbench, r.e2ePgbenchCPU = pb, cpu
	logf("  pgbench %.0f/s, CPU per transaction %v", pb.rate, r.pgbenchPerTx())

	pgStore := pgCounts(cfg.dsn, pgSchema)
	points := []struct {
		proc             *caddyProc
		storage, target  string
		path             string
		conns            int
		counts           e2eStore
		app              string // PostgreSQL: the backends' application_name
		sqliteBaselineAt int
	}{
		{pgCaddy, "postgres", "webhook", "/contact", 32, pgStore, e2eApp, 0},
		{oldCaddy, "postgres", e2eOldTarget, "/contact", 32, pgCounts(cfg.dsn, oldSchema), e2eOldApp, 0},
		{pgCaddy, "postgres", "webhook", "/contact", 64, pgStore, e2eApp, 0},
		{pgCaddy, "postgres", "file", "/mail", 32, pgStore, e2eApp, 0},
		{sqCaddy, "sqlite", "webhook", "/contact", 32, sqliteCounts(sqPath), "", 32},
		{sqCaddy, "sqlite", "webhook", "/contact", 64, sqliteCounts(sqPath), "", 0},
	}
	for _, pt := range points {
		if cfg.e2ePoints != "" && !strings.Contains(pt.storage+" "+pt.target, cfg.e2ePoints) {
			continue
		}
		if pt.sqliteBaselineAt > 0 {
			// SQLite's one-commit-per-request rate, on a file of its own, same run.
			sqa, err := openSQLiteUnshared(ctx, filepath.Join(cfg.tmp, "e2e-accept.db"))
			if err != nil {
				return err
			}
			settleDisk()
			r.e2eSqliteAccept = perRequestAccept(sqa, pt.sqliteBaselineAt, cfg.dur)
			logf("  sqlite-accept at %d: %.0f/s", pt.sqliteBaselineAt, r.e2eSqliteAccept.rate)
			sqa.Close()
		}
		if pt.app != "" {
			settle(ctx, cfg.dsn, schemas)
		} else {
			settleDisk()
		}
		logf("e2e: %s, %s, %d connections", pt.storage, pt.target, pt.conns)
		e, err := runE2EPoint(ctx, cfg, pt.proc, recv, pt.path, pt.conns, pt.counts, pt.app)
		if err != nil {
			return err
		}
		e.storage, e.target = pt.storage, pt.target
		logf("  accepted %.0f/s (p99 %v), delivered %.0f/s, backlog %d -> %d, drained in %v (%v), CPU per submission %v (caddy %v, postgres %v, receiver %v)",
			e.p.rate, e.p.p99.Round(10*time.Microsecond), e.delivered, e.backlogStart, e.backlogEnd, e.drain.Round(time.Millisecond), e.drained,
			e.perSubmission(), e.cpuCaddy, e.cpuPG, e.cpuRecv)
		r.e2e = append(r.e2e, e)
	}
	return nil
}

// e2eWarmUp is the unmeasured first load of each Caddy.
const e2eWarmUp = 3 * time.Second

// e2eDrainLimit bounds the wait for the worker to catch up after a point.
const e2eDrainLimit = 3 * time.Minute

// runE2EPoint waits for an empty backlog, runs the load, reads the backlog and the sent
// count, then waits for the worker to catch up, measuring the CPU of the whole.
func runE2EPoint(ctx context.Context, cfg *config, caddy, recv *caddyProc, path string, conns int, counts e2eStore, app string) (e2ePoint, error) {
	e := e2ePoint{conns: conns}
	if _, err := waitBacklog(ctx, counts, 0, e2eDrainLimit); err != nil {
		return e, fmt.Errorf("before the point: %w", err)
	}
	b0, s0, err := counts(ctx)
	if err != nil {
		return e, err
	}
	var backends *backendCPU
	if app != "" {
		backends = sampleBackends(ctx, cfg.dsn, app)
	}
	c0, r0 := procCPU(caddy.cmd.Process.Pid), procCPU(recv.cmd.Process.Pid)
	var profiled chan error
	if cfg.caddyProfile != "" {
		profiled = make(chan error, 1)
		prefix := filepath.Join(cfg.caddyProfile, fmt.Sprintf("e2e-%d-%s-%d", caddy.cmd.Process.Pid, strings.Trim(path, "/"), conns))
		go func() { profiled <- caddy.profile(prefix, cfg.dur-time.Second) }()
	}
	start := time.Now()
	p, err := load(cfg, caddy.url(path), conns, cfg.dur, true)
	if err != nil {
		if backends != nil {
			backends.total()
		}
		return e, err
	}
	loadTime := time.Since(start)
	if profiled != nil {
		if err := <-profiled; err != nil {
			logf("  caddy profile: %v", err)
		}
	}
	b1, s1, err := counts(ctx)
	if err != nil {
		return e, err
	}
	e.p, e.backlogStart, e.backlogEnd = p, b0, b1
	e.delivered = float64(s1-s0) / 2 / loadTime.Seconds()
	e.drain, err = waitBacklog(ctx, counts, b0, e2eDrainLimit)
	e.drained = err == nil
	if err != nil {
		logf("  %v", err)
	}
	e.cpuCaddy = procCPU(caddy.cmd.Process.Pid) - c0
	e.cpuRecv = procCPU(recv.cmd.Process.Pid) - r0
	if backends != nil {
		e.cpuPG = backends.total()
		e.pgActive = backends.active
	}
	return e, nil
}

// waitBacklog polls until at most n deliveries are not yet sent and returns how long it
// took. It polls every 250 ms: each poll costs the database a count.
func waitBacklog(ctx context.Context, counts e2eStore, n int64, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		b, _, err := counts(ctx)
		if err != nil {
			return time.Since(start), err
		}
		if b <= n {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return time.Since(start), fmt.Errorf("backlog still %d deliveries after %v", b, limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// procCPU is the user and system CPU a process has used, from /proc/<pid>/stat; 0 when it
// cannot be read.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields follow its last ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	// Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the name.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * clockTick
}

// backendCPU sums the CPU of the PostgreSQL backends with one application_name while it
// runs: the backends present at the start are read then, and every backend is read
// every 100 ms, so one that exits (pgbench's, at its end) loses at most its last 100 ms.
type backendCPU struct {
	stop chan struct{}
	done chan time.Duration
	// active counts, per statement (activeLabel), the samples that found a backend
	// running it: where PostgreSQL's time goes. Read after total.
	active map[string]int
}

// activeLabel names the store's statements by their start (outbox/pgstore/queries).
func activeLabel(query string) string {
	q := strings.Join(strings.Fields(query), " ")
	switch {
	case strings.HasPrefix(q, "WITH s AS ( INSERT INTO submissions"):
		return "accept"
	case strings.HasPrefix(q, "WITH c AS ( SELECT * FROM unnest"), strings.HasPrefix(q, "WITH u AS ( UPDATE deliveries"):
		return "complete"
	case strings.HasPrefix(q, "WITH due AS"):
		return "claim"
	case strings.HasPrefix(strings.ToLower(q), "commit"), strings.HasPrefix(strings.ToLower(q), "begin"):
		return "begin/commit"
	}
	return "other"
}

func sampleBackends(ctx context.Context, dsn, app string) *backendCPU {
	b := &backendCPU{stop: make(chan struct{}), done: make(chan time.Duration, 1), active: map[string]int{}}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		logf("backend CPU: %v", err)
		b.done <- 0
		close(b.stop)
		return b
	}
	pids := func() []int {
		rows, err := conn.Query(ctx, `SELECT pid, state = 'active', left(query, 60) FROM pg_stat_activity WHERE application_name = $1`, app)
		if err != nil {
			return nil
		}
		var out []int
		for rows.Next() {
			var (
				pid    int32
				active bool
				query  string
			)
			if rows.Scan(&pid, &active, &query) == nil {
				out = append(out, int(pid))
				if active {
					b.active[activeLabel(query)]++
				}
			}
		}
		rows.Close()
		return out
	}
	first, last := map[int]time.Duration{}, map[int]time.Duration{}
	initial := pids()
	clear(b.active)
	for _, p := range initial {
		first[p] = procCPU(p)
		last[p] = first[p]
	}
	go func() {
		defer conn.Close(context.Background())
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		read := func() {
			for _, p := range pids() {
				if c := procCPU(p); c > 0 {
					last[p] = c
				}
			}
		}
		for {
			select {
			case <-b.stop:
				read()
				var sum time.Duration
				for p, c := range last {
					sum += c - first[p]
				}
				b.done <- sum
				return
			case <-t.C:
				read()
			}
		}
	}()
	return b
}

// total stops the sampling and returns the backends' CPU since the start.
func (b *backendCPU) total() time.Duration {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	return <-b.done
}

// pgbenchCPU runs the pgbench baseline and returns its point and the CPU it took: the
// pgbench client and its backends.
func pgbenchCPU(ctx context.Context, cfg *config, schema string, conns int) (point, time.Duration, error) {
	backends := sampleBackends(ctx, cfg.dsn, "pgbench")
	p, err := runPgbench(cfg, schema, conns, cfg.dur)
	pg := backends.total()
	if err != nil {
		return p, 0, err
	}
	return p, pg + p.clientCPU, nil
}
