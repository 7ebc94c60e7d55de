package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/providers"
)

// Both queues get the same concurrency; River keeps its defaults except the fetch
// cooldown (default 100ms, which alone would cap it near 1,000 jobs/s at 100 workers) and
// the poll interval, set to what is fast for a burn-down. The reference setting is 100
// workers, batch 100; -burnsweep adds more (issue 21: each side at its best).
const (
	burnWorkers = 100
	burnBatch   = 100
)

// defaultBurnSweep are the settings every run adds to the reference, so that the report
// compares each side at its best: River is fastest at 2,000 workers, form_outbox at 500
// to 2,000 with claims of 200 (measured with -burnsweep 500/200,1000/200,2000/200,2000/400
// against the completion by primary key, docs/design.md "Recording outcomes"; larger
// claims cost the same per row).
const defaultBurnSweep = "500/200,2000/200"

type noopSender struct{ onSend func(outbox.Delivery) }

func (n noopSender) Send(_ context.Context, d outbox.Delivery) (providers.Result, error) {
	if n.onSend != nil {
		n.onSend(d)
	}
	return providers.Result{Provider: "noop", MessageID: d.ID.String()[:8]}, nil
}

// insertDeliveries adds n submissions with one delivery each, in status, due a minute ago.
func insertDeliveries(ctx context.Context, pool *pgxpool.Pool, n int, status string) error {
	for done := 0; done < n; {
		k := min(50_000, n-done)
		_, err := pool.Exec(ctx, `
WITH s AS (
	INSERT INTO submissions (id, form, status, data, meta, created_at)
	SELECT gen_random_uuid(), 'contact', 'accepted', '{"message":"bench"}', '{}', now() - interval '1 hour'
	FROM generate_series(1, $1) RETURNING id
)
INSERT INTO deliveries (id, submission_id, route, channel, recipient, status, attempts, max_attempts,
	next_attempt_at, payload, created_at, updated_at, sent_at)
SELECT gen_random_uuid(), s.id, 'webhook', 'webhook', 'http://127.0.0.1:9/a', $2, 0, 8,
	now() - interval '1 minute', '{}', now(), now(), CASE WHEN $2 = 'sent' THEN now() END FROM s`, k, status)
		if err != nil {
			return fmt.Errorf("insert %d %s deliveries: %w", k, status, err)
		}
		done += k
	}
	return nil
}

func countWhere(ctx context.Context, pool *pgxpool.Pool, query string) int {
	var n int
	_ = pool.QueryRow(ctx, query).Scan(&n)
	return n
}

// waitCount polls query until it reaches n, returning the time it took. A count over the
// whole table costs the database milliseconds of CPU, taken from the queue under test, so
// it polls every 100 ms (a resolution well under 1% of a full burn-down).
func waitCount(ctx context.Context, pool *pgxpool.Pool, query string, n int, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		if got := countWhere(ctx, pool, query); got >= n {
			return time.Since(start), nil
		} else if time.Since(start) > limit {
			return 0, fmt.Errorf("only %d of %d done after %v", got, n, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// burnSetting is one side's settings in a burn-down: workers (sends in flight) and, for
// form_outbox, the claim batch (River sizes its fetches from its free workers).
type burnSetting struct{ workers, batch int }

// benchBurnDown burns down cfg.burnN due jobs with each queue at each setting of
// cfg.burnSweep (the first is the reference setting of the Worker table), in the same
// run, and compares each side's best.
func benchBurnDown(ctx context.Context, cfg *config, r *report) error {
	r.burnSweep = nil
	for i, set := range cfg.burnSweep {
		ours, err := burnOurs(ctx, cfg, set)
		if err != nil {
			return err
		}
		river, err := burnRiver(ctx, cfg, set.workers)
		if err != nil {
			return err
		}
		logf("  burn-down at %d workers, batch %d: form_outbox %.0f/s, River %.0f/s", set.workers, set.batch, ours, river)
		r.burnSweep = append(r.burnSweep, burnPoint{set, ours, river})
		if i == 0 {
			r.burnOurs, r.burnRiver = ours, river
		}
	}
	return nil
}

type burnPoint struct {
	set         burnSetting
	ours, river float64 // jobs per second
}

// burnOurs is form_outbox's burn-down rate at set.
func burnOurs(ctx context.Context, cfg *config, set burnSetting) (float64, error) {
	const schema = "bench_burn"
	_ = dropSchema(ctx, cfg.dsn, schema)
	defer dropSchema(context.Background(), cfg.dsn, schema)
	st, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn + "&pool_max_conns=8", Schema: schema})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	if err := insertDeliveries(ctx, st.Pool(), cfg.burnN, "pending"); err != nil {
		return 0, err
	}
	_, _ = st.Pool().Exec(ctx, `VACUUM ANALYZE deliveries`)
	_, _ = st.Pool().Exec(ctx, `CHECKPOINT`)
	settleDisk()
	logf("burn-down: form_outbox, %d deliveries, %d workers, batch %d", cfg.burnN, set.workers, set.batch)
	w := outbox.NewWorker(outbox.WorkerConfig{
		Store: st, Sender: noopSender{}, Concurrency: set.workers, Batch: set.batch,
		PollInterval: time.Second, Lease: time.Minute, Logger: zap.NewNop(),
	})
	if err := w.Start(ctx); err != nil {
		return 0, err
	}
	el, err := waitCount(ctx, st.Pool(), `SELECT count(*) FROM deliveries WHERE status = 'sent'`, cfg.burnN, 10*time.Minute)
	_ = w.Stop(ctx)
	if err != nil {
		return 0, fmt.Errorf("form_outbox burn-down: %w", err)
	}
	return float64(cfg.burnN) / el.Seconds(), nil
}

// burnRiver is River's burn-down rate with workers, same database, same N.
func burnRiver(ctx context.Context, cfg *config, workers int) (float64, error) {
	const rschema = "bench_river"
	_ = dropSchema(ctx, cfg.dsn, rschema)
	defer dropSchema(context.Background(), cfg.dsn, rschema)
	pc, err := pgxpool.ParseConfig(cfg.dsn)
	if err != nil {
		return 0, err
	}
	pc.MaxConns = 8
	pc.ConnConfig.RuntimeParams["search_path"] = rschema
	conn, err := pgx.Connect(ctx, cfg.dsn)
	if err != nil {
		return 0, err
	}
	_, err = conn.Exec(ctx, `CREATE SCHEMA `+rschema)
	conn.Close(ctx)
	if err != nil {
		return 0, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	drv := riverpgxv5.New(pool)
	mig, err := rivermigrate.New(drv, nil)
	if err != nil {
		return 0, err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return 0, fmt.Errorf("river migrate: %w", err)
	}
	ws := river.NewWorkers()
	river.AddWorker(ws, &noopWorker{})
	client, err := river.NewClient(drv, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
		FetchCooldown:     time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return 0, err
	}
	for done := 0; done < cfg.burnN; {
		k := min(5000, cfg.burnN-done)
		params := make([]river.InsertManyParams, k)
		for i := range params {
			params[i] = river.InsertManyParams{Args: noopArgs{}}
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return 0, fmt.Errorf("river insert: %w", err)
		}
		done += k
	}
	_, _ = pool.Exec(ctx, `VACUUM ANALYZE river_job`)
	_, _ = pool.Exec(ctx, `CHECKPOINT`)
	settleDisk()
	logf("burn-down: River, %d jobs, %d workers", cfg.burnN, workers)
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	_, err = waitCount(ctx, pool, `SELECT count(*) FROM river_job WHERE state = 'completed'`, cfg.burnN, 10*time.Minute)
	el := time.Since(start)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_ = client.Stop(sctx)
	cancel()
	if err != nil {
		return 0, fmt.Errorf("river burn-down: %w", err)
	}
	return float64(cfg.burnN) / el.Seconds(), nil
}

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct{ river.WorkerDefaults[noopArgs] }

func (*noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// benchCommitToSend measures the time from a committed Accept in one process's pool to
// the Send call in another's worker, with LISTEN/NOTIFY and with the poll tick alone.
func benchCommitToSend(ctx context.Context, cfg *config, r *report) error {
	for _, notify := range []bool{true, false} {
		p50, p99, err := commitToSend(ctx, cfg, notify)
		if err != nil {
			return err
		}
		if notify {
			r.c2sOn = [2]time.Duration{p50, p99}
		} else {
			r.c2sOff = [2]time.Duration{p50, p99}
		}
	}
	return nil
}

const offPollInterval = time.Second

func commitToSend(ctx context.Context, cfg *config, notify bool) (time.Duration, time.Duration, error) {
	const schema = "bench_latency"
	_ = dropSchema(ctx, cfg.dsn, schema)
	defer dropSchema(context.Background(), cfg.dsn, schema)
	producer, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn, Schema: schema})
	if err != nil {
		return 0, 0, err
	}
	defer producer.Close()
	consumer, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn, Schema: schema})
	if err != nil {
		return 0, 0, err
	}
	defer consumer.Close()
	var (
		mu        sync.Mutex
		committed = map[uuid.UUID]time.Time{}
		latencies []time.Duration
	)
	sent := make(chan struct{}, cfg.latN)
	w := outbox.NewWorker(outbox.WorkerConfig{
		Store: consumer, Concurrency: 8, PollInterval: offPollInterval, Notifications: notify, Logger: zap.NewNop(),
		Sender: noopSender{onSend: func(d outbox.Delivery) {
			now := time.Now()
			mu.Lock()
			if t, ok := committed[d.SubmissionID]; ok {
				// A tick between the commit and the map update sees the placeholder.
				latencies = append(latencies, max(now.Sub(t), 0))
			}
			mu.Unlock()
			sent <- struct{}{}
		}},
	})
	if err := w.Start(ctx); err != nil {
		return 0, 0, err
	}
	defer w.Stop(context.Background())
	// Give the listener its LISTEN before the first commit.
	time.Sleep(200 * time.Millisecond)
	logf("commit-to-send: notifications %v, %d samples", notify, cfg.latN)
	for range cfg.latN {
		sub, ds := benchSubmission(time.Now().Add(-time.Second))
		ds = ds[:1]
		mu.Lock()
		// The commit time is taken when Accept returns; registering before the call only
		// makes sure the worker can never see the row without its entry.
		committed[sub.ID] = time.Now().Add(time.Hour)
		mu.Unlock()
		if _, err := outbox.AcceptOne(ctx, producer, sub, ds); err != nil {
			return 0, 0, err
		}
		mu.Lock()
		committed[sub.ID] = time.Now()
		mu.Unlock()
		if notify {
			producer.Broadcast(ctx)
		}
		// Spaced past the NOTIFY debounce window, so each sample is one wake-up.
		time.Sleep(60 * time.Millisecond)
	}
	deadline := time.After(offPollInterval*3 + 30*time.Second)
	for range cfg.latN {
		select {
		case <-sent:
		case <-deadline:
			return 0, 0, fmt.Errorf("not every delivery was sent")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	p50, p99 := percentiles(latencies)
	return p50, p99, nil
}

func percentiles(ds []time.Duration) (time.Duration, time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)*50/100], s[min(len(s)-1, len(s)*99/100)]
}
