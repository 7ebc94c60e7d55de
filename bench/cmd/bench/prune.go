package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
)

const (
	pruneApp    = "bench_prune"
	pruneSchema = "bench_prune"
	// pruneRetention is the Caddyfile's retention; the seeded history is older.
	pruneRetention = "365d"
	pruneMaxAge    = 365 * 24 * time.Hour
	// pruneSample is the interval at which pg_stat_activity is read for open prune
	// transactions: a transaction's measured length is short of its real one by at most
	// this, and one shorter than it may go unseen.
	pruneSample = 10 * time.Millisecond
	// pruneLimit bounds the wait for the pass to finish.
	pruneLimit = 15 * time.Minute
)

// pruneResult is the retention part's figures.
type pruneResult struct {
	n                int // old submissions seeded (2 deliveries, 2 attempts, 1 event each)
	seedTook, vacuum time.Duration
	// Intake at 32 connections, in windows taken in turn on Caddies without and with
	// retention (off[i] then on[i]); every "on" window runs while its Caddy's pass does.
	off, on []point
	// duringPass: every "on" window began and ended inside its Caddy's prune pass.
	duringPass bool
	// The last pass (the one left to run to its end, uninterrupted): transactions seen,
	// their longest and median length, the time from the first one's start to the last
	// one's end, and the submissions its end-of-pass line counted.
	batches         int
	longest, median time.Duration
	pass            time.Duration
	lastPass        int
	pruned          int   // old submissions gone at the end (of n)
	left            int64 // old rows left in submissions, deliveries, attempts and events
	batchSize       int
	expectedBatches int // in the last pass
}

func (p *pruneResult) rowsPerSec() float64 {
	if p.pass <= 0 {
		return 0
	}
	return float64(p.lastPass) / p.pass.Seconds()
}

// p99s returns the median p99 of the windows without and with pruning.
func (p *pruneResult) p99s() (off, on time.Duration) { return medianP99(p.off), medianP99(p.on) }

func medianP99(ps []point) time.Duration {
	if len(ps) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(ps))
	for i, pt := range ps {
		ds[i] = pt.p99
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	if len(ds)%2 == 0 {
		return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	return ds[len(ds)/2]
}

// ok is issue 21's target 3 for retention: the whole history pruned, in bounded
// batches, with intake p99 while pruning within 1.5x of its value without.
func (p *pruneResult) ok() bool {
	off, on := p.p99s()
	return p.duringPass && p.left == 0 && p.pruned >= p.n && off > 0 && on > 0 && float64(on) <= 1.5*float64(off)
}

// benchPrune seeds cfg.pruneN submissions older than the retention, all finished, and
// measures intake on real Caddies with the worker on, in turn without retention and with
// it while its pruner works through the history (each Caddy with retention starts a
// pass; stopping it cuts the pass short, its open batch rolled back), then lets the last
// pass run to its end.
func benchPrune(ctx context.Context, cfg *config, r *report) error {
	res := &pruneResult{n: cfg.pruneN, batchSize: outbox.DefaultPruneBatch}
	if err := dropSchema(ctx, cfg.dsn, pruneSchema); err != nil {
		return err
	}
	defer dropSchema(context.Background(), cfg.dsn, pruneSchema)
	st, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn, Schema: pruneSchema})
	if err != nil {
		return err
	}
	defer st.Close()
	logf("retention: seeding %d submissions older than %s", res.n, pruneRetention)
	t0 := time.Now()
	to := time.Now().Add(-pruneMaxAge - 35*24*time.Hour)
	h := history{first: 0, n: res.n, perSub: 2, attempts: true, events: true, from: to.Add(-365 * 24 * time.Hour), to: to}
	if _, err := seedHistory(ctx, st.Pool(), h); err != nil {
		return err
	}
	res.seedTook = time.Since(t0)
	if res.vacuum, err = vacuumAnalyze(ctx, st.Pool(), "submissions", "deliveries", "delivery_attempts", "events"); err != nil {
		return err
	}
	logf("  seeded in %v, VACUUM ANALYZE %v", res.seedTook.Round(time.Millisecond), res.vacuum.Round(time.Millisecond))

	recv, err := startCaddyfile(cfg, "prune-receiver", receiverCaddyfile, strings.NewReplacer())
	if err != nil {
		return err
	}
	defer recv.stop()
	sep := "?"
	if strings.Contains(cfg.dsn, "?") {
		sep = "&"
	}
	storage := fmt.Sprintf("postgres %q {\n\t\t\tschema %s\n\t\t}", cfg.dsn+sep+"application_name="+pruneApp, pruneSchema)
	counts := pgCounts(cfg.dsn, pruneSchema)
	started := 0
	// start settles the tables (the backlog is drained: every Caddy drains its own
	// before it stops), starts a Caddy and warms it up unmeasured (a fresh process's
	// pool and plans). With retention, its pass begins as it starts.
	start := func(retention bool) (*caddyProc, string, error) {
		settle(ctx, cfg.dsn, []string{pruneSchema})
		name, line := fmt.Sprintf("prune-off-%d", started), ""
		if retention {
			name, line = fmt.Sprintf("prune-on-%d", started), "retention "+pruneRetention
		}
		started++
		// The end-to-end configuration users run (worker on with its defaults, each
		// submission to two webhooks on the receiver); its worker line carries the
		// retention, or nothing.
		p, err := startCaddyfile(cfg, name, e2eCaddyfile, strings.NewReplacer("{{STORAGE}}", storage,
			"{{RECV}}", strconv.Itoa(recv.port), "{{WORKER}}", line))
		if err != nil {
			return nil, "", err
		}
		if err = warmUp(p); err == nil {
			_, err = load(cfg, p.url("/contact"), 32, e2eWarmUp, true)
		}
		if err != nil {
			p.stop()
			return nil, "", err
		}
		return p, filepath.Join(cfg.tmp, name, "caddy.log"), nil
	}
	// The sampler runs through every window, with retention or without, so that its
	// reads cost both sides the same.
	samp := samplePrune(ctx, cfg.dsn, pruneApp)
	stopped := false
	stopSamp := func() []pruneTx {
		if stopped {
			return nil
		}
		stopped = true
		return samp.stop()
	}
	defer stopSamp()
	res.duringPass = true
	for i := range pruneRounds(cfg) {
		for _, retention := range []bool{false, true} {
			p, logPath, err := start(retention)
			if err != nil {
				return err
			}
			pt, err := load(cfg, p.url("/contact"), 32, cfg.dur, true)
			passEnded := retention && passLogged(logPath)
			if err == nil {
				_, err = waitBacklog(ctx, counts, 0, e2eDrainLimit)
			}
			p.stop()
			if err != nil {
				return err
			}
			if retention {
				res.on = append(res.on, pt)
				res.duringPass = res.duringPass && !passEnded
			} else {
				res.off = append(res.off, pt)
			}
			logf("  round %d, retention %v: p50 %v p99 %v, %.0f/s%s", i+1, retention, pt.p50, pt.p99, pt.rate,
				map[bool]string{true: " (the pass had ended: not a window under pruning)", false: ""}[passEnded])
		}
	}
	// The last pass, left to its end: its transactions are the ones the sampler sees
	// from here on.
	early := stopSamp()
	_, remaining, err := oldRowsLeft(ctx, cfg.dsn, pruneSchema, time.Now().Add(-pruneMaxAge))
	if err != nil {
		return err
	}
	// A pass that prunes nothing logs nothing: with nothing left (a small -prunen, all
	// pruned during the rounds) there is no last pass to time.
	var (
		logged int
		txs    []pruneTx
	)
	if remaining > 0 {
		samp, stopped = samplePrune(ctx, cfg.dsn, pruneApp), false
		p, logPath, err := start(true)
		if err != nil {
			return err
		}
		defer p.stop()
		logged, err = waitPruned(logPath, pruneLimit)
		txs = stopSamp()
		if err != nil {
			return err
		}
	} else {
		logf("  nothing left for a last pass: every old submission was pruned during the rounds")
	}
	res.lastPass = logged
	res.batches, res.longest, res.median, res.pass = summarizePrune(txs)
	// The longest transaction is the longest of every pass, the interrupted ones too.
	_, earlyLongest, _, _ := summarizePrune(early)
	res.longest = max(res.longest, earlyLongest)
	res.expectedBatches = logged/res.batchSize + 1
	subsLeft, left, err := oldRowsLeft(ctx, cfg.dsn, pruneSchema, time.Now().Add(-pruneMaxAge))
	if err != nil {
		return err
	}
	res.left, res.pruned = left, res.n-int(subsLeft)
	logf("  last pass: %d submissions pruned (%d old rows, in the four tables, were left before it), %d transactions seen (%d expected), longest %v, median %v, %v from the first to the end of the last (%.0f submissions/s); old rows left: %d",
		logged, remaining, res.batches, res.expectedBatches, res.longest, res.median, res.pass.Round(time.Millisecond), res.rowsPerSec(), res.left)
	off, on := res.p99s()
	logf("  intake p99 median: %v without pruning, %v while pruning", off, on)
	r.prune = res
	return nil
}

// pruneRounds is how many windows are taken without and with pruning, in turn.
func pruneRounds(cfg *config) int {
	if cfg.quick {
		return 1
	}
	return 3
}

// passLogged reports whether the pruner's end-of-pass line is in the Caddy log.
func passLogged(path string) bool {
	data, _ := os.ReadFile(path)
	return prunedRE.Match(data)
}

var prunedRE = regexp.MustCompile(`"msg":"pruned expired submissions".*?"submissions":(\d+)`)

// waitPruned waits for the pruner's end-of-pass line in the Caddy log and returns the
// submissions it counted; an error line of the pruner fails the part.
func waitPruned(path string, limit time.Duration) (int, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(path)
		if m := prunedRE.FindSubmatch(data); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			return n, nil
		}
		if i := strings.Index(string(data), `"msg":"prune expired submissions"`); i >= 0 {
			return 0, fmt.Errorf("the pruner failed: %s", lastLines(data[i:], 1))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, fmt.Errorf("no end of the prune pass within %v (see %s)", limit, path)
}

// pruneTx is one prune transaction seen in pg_stat_activity: its start and the last
// sample that found it open (both on the server's clock).
type pruneTx struct{ start, lastSeen time.Time }

type pruneSampler struct {
	done chan struct{}
	out  chan []pruneTx
}

// samplePrune reads pg_stat_activity every pruneSample for open transactions of app's
// backends whose statement is one of the pruner's (outbox/pgstore/queries/ops.sql
// PruneSubmissions and PruneEvents, autoreply.sql PruneAutoreplies; a transaction idle
// between them still shows the last), keyed by backend and transaction start.
func samplePrune(ctx context.Context, dsn, app string) *pruneSampler {
	s := &pruneSampler{done: make(chan struct{}), out: make(chan []pruneTx, 1)}
	go func() {
		seen := map[string]*pruneTx{}
		var order []string
		defer func() {
			txs := make([]pruneTx, 0, len(order))
			for _, k := range order {
				txs = append(txs, *seen[k])
			}
			s.out <- txs
		}()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			logf("prune sampler: %v", err)
			<-s.done
			return
		}
		defer conn.Close(context.Background())
		t := time.NewTicker(pruneSample)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
			}
			rows, err := conn.Query(ctx, `SELECT pid, xact_start, clock_timestamp() FROM pg_stat_activity
				WHERE application_name = $1 AND xact_start IS NOT NULL
				AND (query LIKE '%DELETE FROM submissions WHERE id IN%' OR query LIKE '%DELETE FROM events WHERE id IN%'
					OR query LIKE '%DELETE FROM autoreplies WHERE%')`, app)
			if err != nil {
				logf("prune sampler: %v", err)
				continue
			}
			for rows.Next() {
				var (
					pid       int32
					start, at time.Time
				)
				if rows.Scan(&pid, &start, &at) != nil {
					continue
				}
				k := fmt.Sprintf("%d/%d", pid, start.UnixNano())
				if tx, ok := seen[k]; ok {
					tx.lastSeen = at
				} else {
					seen[k] = &pruneTx{start, at}
					order = append(order, k)
				}
			}
			rows.Close()
		}
	}()
	return s
}

// stop ends the sampling and returns the transactions seen, in the order first seen.
func (s *pruneSampler) stop() []pruneTx {
	close(s.done)
	return <-s.out
}

// summarizePrune returns how many transactions were seen, the longest and the median
// seen length, and the time from the first one's start to the last one's last sample.
func summarizePrune(txs []pruneTx) (n int, longest, median, pass time.Duration) {
	if len(txs) == 0 {
		return 0, 0, 0, 0
	}
	lens := make([]time.Duration, len(txs))
	first, last := txs[0].start, txs[0].lastSeen
	for i, tx := range txs {
		lens[i] = tx.lastSeen.Sub(tx.start)
		if tx.start.Before(first) {
			first = tx.start
		}
		if tx.lastSeen.After(last) {
			last = tx.lastSeen
		}
	}
	sort.Slice(lens, func(i, j int) bool { return lens[i] < lens[j] })
	return len(txs), lens[len(lens)-1], lens[len(lens)/2], last.Sub(first)
}

// oldRowsLeft counts the rows older than before left in the tables retention prunes:
// the submissions, and the rows of all four tables.
func oldRowsLeft(ctx context.Context, dsn, schema string, before time.Time) (subs, total int64, err error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	for i, q := range []string{
		`SELECT count(*) FROM %s.submissions WHERE created_at < $1`,
		`SELECT count(*) FROM %s.deliveries WHERE created_at < $1`,
		`SELECT count(*) FROM %s.delivery_attempts WHERE started_at < $1`,
		`SELECT count(*) FROM %s.events WHERE at < $1`,
	} {
		var n int64
		if err := conn.QueryRow(ctx, fmt.Sprintf(q, pgx.Identifier{schema}.Sanitize()), before).Scan(&n); err != nil {
			return 0, 0, err
		}
		if i == 0 {
			subs = n
		}
		total += n
	}
	return subs, total, nil
}
