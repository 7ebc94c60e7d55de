package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", to count what the SQLite Caddy stored

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
)

// The intake Caddyfile: one form with two webhook deliveries (so each submission is the
// same transaction pgbench runs: submission + 2 deliveries + event), and a `respond`
// route on the same server as the HTTP ceiling. The instance runs with `worker off` (an
// intake-only instance, as when intake and delivery are scaled separately), so intake is
// measured doing the same writes as pgbench and nothing else. The admin endpoint listens
// on a loopback port so a run can be profiled (/debug/pprof/profile).
const intakeCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	storage file_system {{DIR}}/caddy
	form_outbox {
		storage {{STORAGE}}
		worker off
	}
}
http://127.0.0.1:{{PORT}} {
	form_outbox /contact {
		form contact
		field message required
		notify webhook http://127.0.0.1:9/a
		notify webhook http://127.0.0.1:9/b
	}
	respond /ceiling "ok" 200
}
`

type caddyProc struct {
	cmd   *exec.Cmd
	port  int
	admin int
	done  chan struct{}
}

func startCaddy(cfg *config, name, storage string) (*caddyProc, error) {
	return startCaddyfile(cfg, name, intakeCaddyfile, strings.NewReplacer("{{STORAGE}}", storage))
}

// startCaddyfile starts the built Caddy on caddyfile, whose {{DIR}}, {{PORT}} and
// {{ADMIN}} are filled in here and the rest by more, and waits until /ceiling answers.
func startCaddyfile(cfg *config, name, caddyfile string, more *strings.Replacer) (*caddyProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	admin, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.tmp, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cf := strings.NewReplacer("{{DIR}}", dir, "{{PORT}}", strconv.Itoa(port), "{{ADMIN}}", strconv.Itoa(admin)).Replace(more.Replace(caddyfile))
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(cf), 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "caddy.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.caddyBin, "run", "--config", path, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	logf("caddy %s: admin (pprof) at http://127.0.0.1:%d/debug/pprof/", name, admin)
	p := &caddyProc{cmd: cmd, port: port, admin: admin, done: make(chan struct{})}
	go func() { cmd.Wait(); log.Close(); close(p.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return nil, fmt.Errorf("caddy %s exited at start; see %s", name, log.Name())
		default:
		}
		if resp, err := http.Get(p.url("/ceiling")); err == nil {
			resp.Body.Close()
			return p, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stop()
	return nil, fmt.Errorf("caddy %s did not answer within 30s", name)
}

func (p *caddyProc) url(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", p.port, path)
}

// profile fetches a CPU profile and an allocation profile (the allocations made during
// the window) of the Caddy process over dur from its admin endpoint and writes them to
// prefix+".cpu.pprof" and prefix+".allocs.pprof" (-caddyprofile).
func (p *caddyProc) profile(prefix string, dur time.Duration) error {
	secs := max(int(dur.Seconds()), 1)
	errs := make(chan error, 2)
	for kind, path := range map[string]string{"profile": prefix + ".cpu.pprof", "allocs": prefix + ".allocs.pprof"} {
		go func() {
			errs <- fetchTo(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/%s?seconds=%d", p.admin, kind, secs), path)
		}()
	}
	return errors.Join(<-errs, <-errs)
}

func fetchTo(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (p *caddyProc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// rssKB reads a process's resident set (VmRSS) and its peak (VmHWM), in kB.
func rssKB(pid int) (rss, hwm int) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 {
			switch f[0] {
			case "VmRSS:":
				rss, _ = strconv.Atoi(f[1])
			case "VmHWM:":
				hwm, _ = strconv.Atoi(f[1])
			}
		}
	}
	return rss, hwm
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// point is one measured configuration: throughput and latency.
type point struct {
	rate     float64 // successful operations per second
	p50, p99 time.Duration
	success  float64 // share of 2xx answers (1 for non-HTTP baselines without errors)
	note     string
	answered int64 // HTTP points: requests answered with success
	// clientCPU is the CPU the load's own client process used (pgbench).
	clientCPU time.Duration
}

// pgbenchScript is the per-request transaction intake runs without group commit: one
// submission, two deliveries and the submission.received event, committed alone.
const pgbenchScript = `BEGIN;
SELECT set_config('bench.sid', gen_random_uuid()::text, true);
INSERT INTO submissions (id, form, status, reason, data, meta, idempotency_key, content_hash, test, created_at)
  VALUES (current_setting('bench.sid')::uuid, 'contact', 'accepted', '', '{"message":"bench"}', '{"origin":"bench"}', NULL, '', false, now());
INSERT INTO deliveries (id, submission_id, route, channel, recipient, status, attempts, max_attempts, next_attempt_at, payload, created_at, updated_at)
  VALUES (gen_random_uuid(), current_setting('bench.sid')::uuid, 'webhook', 'webhook', 'http://127.0.0.1:9/a', 'pending', 0, 0, now() + interval '1 hour', '{}', now(), now());
INSERT INTO deliveries (id, submission_id, route, channel, recipient, status, attempts, max_attempts, next_attempt_at, payload, created_at, updated_at)
  VALUES (gen_random_uuid(), current_setting('bench.sid')::uuid, 'webhook', 'webhook', 'http://127.0.0.1:9/b', 'pending', 0, 0, now() + interval '1 hour', '{}', now(), now());
INSERT INTO events (kind, submission_id, data, at) VALUES ('submission.received', current_setting('bench.sid')::uuid, '{"form":"contact","status":"accepted"}', now());
COMMIT;
`

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without`)
var latRE = regexp.MustCompile(`latency average = ([0-9.]+) ms`)

func pgbenchBin() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(matches) == 0 {
		if p, err := exec.LookPath("pgbench"); err == nil {
			return p, nil
		}
		return "", fmt.Errorf("pgbench not found (install the Debian package postgresql)")
	}
	return matches[len(matches)-1], nil
}

// runPgbench runs the script at conns clients against schema for dur.
func runPgbench(cfg *config, schema string, conns int, dur time.Duration) (point, error) {
	bin, err := pgbenchBin()
	if err != nil {
		return point{}, err
	}
	script := filepath.Join(cfg.tmp, "intake.sql")
	if err := os.WriteFile(script, []byte(pgbenchScript), 0o644); err != nil {
		return point{}, err
	}
	pc, err := pgx.ParseConfig(cfg.dsn)
	if err != nil {
		return point{}, err
	}
	conninfo := fmt.Sprintf("host=%s port=%d user=%s dbname=%s options=-csearch_path=%s", pc.Host, pc.Port, pc.User, pc.Database, schema)
	cmd := exec.Command(bin, "-n", "-M", "prepared", "-c", strconv.Itoa(conns), "-j", strconv.Itoa(min(conns, 2)),
		"-T", strconv.Itoa(max(int(dur.Seconds()), 1)), "-f", script, conninfo)
	if pc.Password != "" {
		cmd.Env = append(os.Environ(), "PGPASSWORD="+pc.Password)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return point{}, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	m := tpsRE.FindSubmatch(out)
	if m == nil {
		return point{}, fmt.Errorf("pgbench: no tps in output: %s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	p := point{rate: tps, success: 1, note: "pgbench reports the mean latency only",
		clientCPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if l := latRE.FindSubmatch(out); l != nil {
		ms, _ := strconv.ParseFloat(string(l[1]), 64)
		p.p50 = time.Duration(ms * float64(time.Millisecond))
	}
	return p, nil
}

// openSQLiteUnshared opens the SQLite store with one write per transaction: the SQLite
// store otherwise runs concurrent writes in one shared transaction (outbox/sqlitestore/
// combine.go), and perRequestAccept's 32 goroutines would share commits.
func openSQLiteUnshared(ctx context.Context, path string) (*sqlitestore.Store, error) {
	return sqlitestore.OpenWith(ctx, path, sqlitestore.Options{MaxSharedWrites: 1})
}

// perRequestAccept is the store's own one-commit-per-request rate: conns goroutines
// calling outbox.AcceptOne (no group commit, no HTTP) for dur.
func perRequestAccept(s outbox.Store, conns int, dur time.Duration) point {
	var (
		n, errs atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		lats    []time.Duration
	)
	stop := time.Now().Add(dur)
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(stop) {
				sub, ds := benchSubmission(time.Now())
				t := time.Now()
				if _, err := outbox.AcceptOne(context.Background(), s, sub, ds); err != nil {
					errs.Add(1)
					continue
				}
				mine = append(mine, time.Since(t))
				n.Add(1)
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	p50, p99 := percentiles(lats)
	total := n.Load() + errs.Load()
	succ := 1.0
	if total > 0 {
		succ = float64(n.Load()) / float64(total)
	}
	return point{rate: float64(n.Load()) / el.Seconds(), p50: p50, p99: p99, success: succ}
}

// benchSubmission is what intake stores for one bench post: two webhook deliveries.
func benchSubmission(at time.Time) (*outbox.Submission, []outbox.Delivery) {
	sub := &outbox.Submission{
		ID: uuid.Must(uuid.NewV7()), Form: "contact", Status: outbox.SubmissionAccepted,
		Data:      outbox.Fields{{Name: "message", Value: "bench"}},
		Meta:      outbox.Meta{Origin: "bench"},
		CreatedAt: at,
	}
	ds := []outbox.Delivery{
		{Route: "webhook", Channel: outbox.ChannelWebhook, Recipient: "http://127.0.0.1:9/a", MaxAttempts: 8, Payload: []byte(`{}`)},
		{Route: "webhook", Channel: outbox.ChannelWebhook, Recipient: "http://127.0.0.1:9/b", MaxAttempts: 8, Payload: []byte(`{}`)},
	}
	return sub, ds
}

// benchIntake measures HTTP intake through Caddy for PostgreSQL and SQLite against
// pgbench, the stores' per-request Accept and Caddy's `respond`.
func benchIntake(ctx context.Context, cfg *config, r *report) error {
	pgSchema, pgbenchSchema := "bench_intake_caddy", "bench_intake_pgbench"
	for _, s := range []string{pgSchema, pgbenchSchema, "bench_intake_accept"} {
		if err := resetSchema(ctx, cfg.dsn, s); err != nil {
			return err
		}
	}
	defer func() {
		for _, s := range []string{pgSchema, pgbenchSchema, "bench_intake_accept"} {
			_ = dropSchema(context.Background(), cfg.dsn, s)
		}
	}()
	// pgbench's tables are the outbox's own, made by the store's migrations.
	pgb, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn, Schema: pgbenchSchema})
	if err != nil {
		return err
	}
	pgb.Close()
	pga, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn, Schema: "bench_intake_accept"})
	if err != nil {
		return err
	}
	defer pga.Close()
	sqa, err := openSQLiteUnshared(ctx, filepath.Join(cfg.tmp, "accept.db"))
	if err != nil {
		return err
	}
	defer sqa.Close()

	pgCaddy, err := startCaddy(cfg, "caddy-pg", fmt.Sprintf("postgres %q {\n\t\t\tschema %s\n\t\t}", cfg.dsn, pgSchema))
	if err != nil {
		return err
	}
	defer pgCaddy.stop()
	sqPath := filepath.Join(cfg.tmp, "caddy-sqlite", "outbox.db")
	sqCaddy, err := startCaddy(cfg, "caddy-sqlite", "sqlite "+sqPath)
	if err != nil {
		return err
	}
	defer sqCaddy.stop()
	// One submission each before measuring: the PostgreSQL store opens (and migrates) on
	// first use, and the counts below read its tables.
	if err := warmUp(pgCaddy, sqCaddy); err != nil {
		return err
	}

	for _, c := range cfg.conns {
		logf("intake at %d connections", c)
		p, err := load(cfg, pgCaddy.url("/ceiling"), c, cfg.dur, false)
		if err != nil {
			return err
		}
		r.add("respond", c, p)
		pgSchemas := []string{pgSchema, pgbenchSchema, "bench_intake_accept"}
		settle(ctx, cfg.dsn, pgSchemas)
		if pb, err := runPgbench(cfg, pgbenchSchema, c, cfg.dur); err != nil {
			r.fail(fmt.Sprintf("pgbench at %d", c), err)
		} else {
			r.add("pgbench", c, pb)
		}
		settle(ctx, cfg.dsn, pgSchemas)
		r.add("pg-accept", c, perRequestAccept(pga, c, cfg.dur))
		var peak int
		stopSample := make(chan struct{})
		sampled := make(chan int)
		go func() {
			m := 0
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stopSample:
					sampled <- m
					return
				case <-t.C:
					rss, _ := rssKB(pgCaddy.cmd.Process.Pid)
					m = max(m, rss)
				}
			}
		}()
		var profiled chan error
		if cfg.caddyProfile != "" {
			profiled = make(chan error, 1)
			path := filepath.Join(cfg.caddyProfile, fmt.Sprintf("caddy-pg-%d", c))
			go func() { profiled <- pgCaddy.profile(path, cfg.dur-time.Second) }()
		}
		settle(ctx, cfg.dsn, pgSchemas)
		p, err = loadStored(cfg, pgCaddy.url("/contact"), c, func() (int64, error) { return countPG(ctx, cfg.dsn, pgSchema) })
		if err != nil {
			return err
		}
		r.add("pg-caddy", c, p)
		if profiled != nil {
			if err := <-profiled; err != nil {
				logf("caddy profile at %d connections: %v", c, err)
			}
		}
		close(stopSample)
		peak = <-sampled
		if c == 64 {
			_, hwm := rssKB(pgCaddy.cmd.Process.Pid)
			r.rssKB, r.rssHWMKB = peak, hwm
		}
		settleDisk()
		r.add("sqlite-accept", c, perRequestAccept(sqa, c, cfg.dur))
		settleDisk()
		p, err = loadStored(cfg, sqCaddy.url("/contact"), c, func() (int64, error) { return countSQLite(ctx, sqPath) })
		if err != nil {
			return err
		}
		r.add("sqlite-caddy", c, p)
	}
	return nil
}

// warmUp posts one submission to each Caddy: the PostgreSQL store opens (and migrates)
// on first use, and the counts read its tables.
func warmUp(procs ...*caddyProc) error {
	for _, p := range procs {
		resp, err := http.Post(p.url("/contact"), "application/json", strings.NewReader(`{"message":"warm-up"}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("warm-up submission: %s", resp.Status)
		}
	}
	return nil
}

// loadStored runs an intake point and checks the guarantee behind the figure: every
// submission answered with success is in the store (count is read before and after; a
// request cut off at the end of the run may be stored without having been counted, so
// the store may hold a few more, never fewer).
func loadStored(cfg *config, url string, conns int, count func() (int64, error)) (point, error) {
	before, err := count()
	if err != nil {
		return point{}, err
	}
	p, err := load(cfg, url, conns, cfg.dur, true)
	if err != nil {
		return point{}, err
	}
	time.Sleep(100 * time.Millisecond) // let requests cut off at the end finish
	after, err := count()
	if err != nil {
		return point{}, err
	}
	if stored := after - before; stored < p.answered {
		return p, fmt.Errorf("%s at %d connections: %d answered with success, only %d stored", url, conns, p.answered, stored)
	}
	p.note = fmt.Sprintf("%d answered with success, %d stored", p.answered, after-before)
	logf("  %s", p.note)
	return p, nil
}

func countPG(ctx context.Context, dsn, schema string) (int64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "submissions"}.Sanitize()).Scan(&n)
	return n, err
}

func countSQLite(ctx context.Context, path string) (int64, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM submissions`).Scan(&n)
	return n, err
}

// settleDisk writes every dirty page of the machine to disk before a point: otherwise
// the kernel's background writeback of what the previous point wrote (SQLite's pages,
// PostgreSQL's data files) lands inside the next one and delays its fsyncs. Without it
// the first 1-connection pg-caddy point showed a p99 of 47-80 ms (p50 ~2 ms) in every
// run; with it, ~7 ms.
func settleDisk() { syscall.Sync() }

// settle gives every PostgreSQL point the same starting state, as pgbench's own
// pre-run vacuum does: the bench schemas' tables vacuumed and analyzed and a checkpoint
// taken, so that neither autovacuum (woken by the previous point's inserts) nor a
// checkpoint's writes land at random inside the next measurement, then settleDisk.
// Failures are logged and the run goes on (CHECKPOINT needs a privileged role).
func settle(ctx context.Context, dsn string, schemas []string) {
	defer settleDisk()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		logf("settle: %v", err)
		return
	}
	defer conn.Close(ctx)
	var tables []string
	for _, s := range schemas {
		for _, t := range []string{"submissions", "deliveries", "delivery_attempts", "events"} {
			tables = append(tables, pgx.Identifier{s, t}.Sanitize())
		}
	}
	if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) "+strings.Join(tables, ", ")); err != nil {
		logf("settle: vacuum: %v", err)
	}
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		logf("settle: checkpoint: %v", err)
	}
}

func resetSchema(ctx context.Context, dsn, schema string) error {
	if err := dropSchema(ctx, dsn, schema); err != nil {
		return err
	}
	return nil
}

func dropSchema(ctx context.Context, dsn, schema string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	return err
}
