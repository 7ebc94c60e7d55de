package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
)

// What an idle instance costs (issue 21: "idle CPU and queries per minute of an idle
// instance must stay near zero"). The limits are ours: a tenth of a percent of one core
// (60 ms of CPU a minute) for the Caddy and its PostgreSQL backends together, and 20
// database transactions a minute. Measured 12 a minute on PostgreSQL: the 15 s poll's
// four passes, a clock read and a claim each (8), and 4 not yet attributed.
const (
	idleCPUPerMinute    = 60 * time.Millisecond
	idleXactsPerMinute  = 20
	idleApp             = "bench_idle"
	idleSchema          = "bench_idle"
	idleDB              = "form_outbox_bench_idle"
	idleSettle          = 10 * time.Second
	idleWindowFull      = time.Minute
	idleWindowQuick     = 15 * time.Second
	idleSQLiteStoreName = "idle-sqlite"
)

// idleResult is one idle instance's cost over its window.
type idleResult struct {
	store    string        // postgres | sqlite
	window   time.Duration // measured
	caddyCPU time.Duration
	pgCPU    time.Duration // its backends' (PostgreSQL only)
	xacts    int64         // transactions its database committed or rolled back, PostgreSQL only; -1 when not counted
}

func (i idleResult) cpuPerMinute() time.Duration {
	return time.Duration(float64(i.caddyCPU+i.pgCPU) * float64(time.Minute) / float64(i.window))
}

func (i idleResult) xactsPerMinute() float64 {
	return float64(i.xacts) * float64(time.Minute) / float64(i.window)
}

// benchIdle starts a Caddy in the end-to-end configuration (worker on, defaults, nothing
// posted) on each store, lets it settle (migrations, the first pass), then reads its CPU
// and, on PostgreSQL, its backends' CPU and the database's transaction count over a
// window. The bench reads the counts from another database.
func benchIdle(ctx context.Context, cfg *config, r *report) error {
	window := idleWindowFull
	if cfg.quick {
		window = idleWindowQuick
	}
	// A database of its own, so that its transaction count is the idle Caddy's alone
	// while other work (a test run) uses the others.
	dsn, err := idleDatabase(ctx, cfg.dsn)
	if err != nil {
		return err
	}
	defer dropIdleDatabase(context.Background(), cfg.dsn)
	st, err := pgstore.Open(ctx, pgstore.Config{DSN: dsn, Schema: idleSchema})
	if err != nil {
		return err
	}
	st.Close()
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	pgStorage := fmt.Sprintf("postgres %q {\n\t\t\tschema %s\n\t\t}", dsn+sep+"application_name="+idleApp, idleSchema)
	sqPath := filepath.Join(cfg.tmp, idleSQLiteStoreName, "outbox.db")
	for _, s := range []struct{ name, storage string }{{"postgres", pgStorage}, {"sqlite", "sqlite " + sqPath}} {
		logf("idle: %s, %v", s.name, window)
		more := strings.NewReplacer("{{STORAGE}}", s.storage, "{{RECV}}", "9", "{{WORKER}}", "")
		p, err := startCaddyfile(cfg, "idle-"+s.name, e2eCaddyfile, more)
		if err != nil {
			return err
		}
		res, err := measureIdle(ctx, cfg, p, s.name, window)
		p.stop()
		if err != nil {
			return err
		}
		logf("  CPU %v (Caddy %v, PostgreSQL %v), %d transactions: %v CPU and %.1f transactions a minute",
			res.caddyCPU+res.pgCPU, res.caddyCPU, res.pgCPU, res.xacts, res.cpuPerMinute(), res.xactsPerMinute())
		r.idle = append(r.idle, res)
	}
	return nil
}

func measureIdle(ctx context.Context, cfg *config, p *caddyProc, store string, window time.Duration) (idleResult, error) {
	select {
	case <-time.After(idleSettle):
	case <-ctx.Done():
		return idleResult{}, ctx.Err()
	}
	res := idleResult{store: store, xacts: -1}
	pid := p.cmd.Process.Pid
	if store != "postgres" {
		c0, t0 := procCPU(pid), time.Now()
		time.Sleep(window)
		res.caddyCPU, res.window = procCPU(pid)-c0, time.Since(t0)
		return res, nil
	}
	conn, err := pgx.Connect(ctx, cfg.dsn)
	if err != nil {
		return res, err
	}
	defer conn.Close(context.Background())
	// One statement reads both the backends and the counter, so the bench adds exactly
	// one transaction per read.
	read := func() (map[int]time.Duration, int64, error) {
		rows, err := conn.Query(ctx, `SELECT a.pid, (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $2)
			FROM pg_stat_activity a WHERE a.application_name = $1`, idleApp, idleDB)
		if err != nil {
			return nil, 0, err
		}
		defer rows.Close()
		cpu := map[int]time.Duration{}
		var xacts int64
		for rows.Next() {
			var pid int
			if err := rows.Scan(&pid, &xacts); err != nil {
				return nil, 0, err
			}
			cpu[pid] = procCPU(pid)
		}
		return cpu, xacts, rows.Err()
	}
	// A backend reports its counts to pg_stat_database when it goes idle, held back up
	// to 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL): both reads lag alike, which over a
	// minute's window moves the figure by at most the few transactions of 10 s.
	b0, x0, err := read()
	if err != nil {
		return res, err
	}
	c0, t0 := procCPU(pid), time.Now()
	time.Sleep(window)
	res.caddyCPU, res.window = procCPU(pid)-c0, time.Since(t0)
	b1, x1, err := read()
	if err != nil {
		return res, err
	}
	for pid, c := range b1 {
		if before, ok := b0[pid]; ok {
			res.pgCPU += c - before
		} else {
			res.pgCPU += c
		}
	}
	res.xacts = x1 - x0
	return res, nil
}

// idleDatabase creates (anew) the idle instance's database and returns dsn pointing at it.
func idleDatabase(ctx context.Context, dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("idle: the DSN must be a URL: %w", err)
	}
	dropIdleDatabase(ctx, dsn)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+idleDB); err != nil {
		return "", err
	}
	u.Path = "/" + idleDB
	return u.String(), nil
}

func dropIdleDatabase(ctx context.Context, dsn string) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+idleDB+" WITH (FORCE)")
}

// idleTargets writes the idle rows of the Targets table.
func (r *report) idleTargets(b *strings.Builder) {
	for _, i := range r.idle {
		cpuOK := i.cpuPerMinute() <= idleCPUPerMinute
		if i.xacts < 0 {
			fmt.Fprintf(b, "| Idle instance (%s, worker on, defaults): CPU <= %v a minute | %v a minute (Caddy; over %v) | %s |\n",
				i.store, idleCPUPerMinute, i.cpuPerMinute().Round(time.Millisecond), i.window.Round(time.Second), verdict(cpuOK))
			continue
		}
		fmt.Fprintf(b, "| Idle instance (%s, worker on, defaults): CPU <= %v and <= %d database transactions a minute | %v CPU (Caddy %v, PostgreSQL %v) and %.1f transactions a minute (over %v) | %s |\n",
			i.store, idleCPUPerMinute, idleXactsPerMinute, i.cpuPerMinute().Round(time.Millisecond),
			i.caddyCPU.Round(time.Millisecond), i.pgCPU.Round(time.Millisecond), i.xactsPerMinute(), i.window.Round(time.Second),
			verdict(cpuOK && i.xactsPerMinute() <= idleXactsPerMinute))
	}
}
