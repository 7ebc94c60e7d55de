package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// history is a block of finished submissions to seed: row numbers first..first+n-1, each
// a submission created at a time spread evenly from 'from' to 'to', with perSub sent
// webhook deliveries (1 to 4), and, when attempts, one attempt per delivery and, when
// events, the submission.received event intake writes with it.
type history struct {
	first, n int
	from, to time.Time
	perSub   int
	attempts bool
	events   bool
}

// seedTiming is how long each table's INSERT took, and the rows it wrote.
type seedTiming struct {
	table string
	rows  int64
	took  time.Duration
}

// v7 is a UUIDv7 built in SQL from a row's time (its 48-bit millisecond prefix) and a
// counter (the 62 low bits; tag, 3 hex digits, tells the tables apart): the ids intake
// writes are UUIDv7 (intake/parse.go, outbox/plan.go), so every index over an id grows at
// its end, as in production, rather than at random places as gen_random_uuid's would.
func v7(ts, counter, tag string) string {
	return fmt.Sprintf("(lpad(to_hex((extract(epoch FROM %s) * 1000)::bigint), 12, '0') || '7%s8' || lpad(to_hex(%s), 15, '0'))::uuid", ts, tag, counter)
}

// seedHistory writes h with one INSERT ... SELECT generate_series per table, into the
// tables as the migrations made them (every index in place, as in production). The
// foreign-key triggers are off for these statements (session_replication_role =
// replica, a superuser setting): each delivery's submission and each attempt's delivery
// is built by the same statement family, so the per-row lookups that would check it,
// 10 million of them at the largest size, check nothing the construction does not
// already guarantee. No other trigger fires for these rows (the autoreply gate is for
// autoreply deliveries). It returns each statement's time.
func seedHistory(ctx context.Context, pool *pgxpool.Pool, h history) ([]seedTiming, error) {
	if h.n <= 0 {
		return nil, nil
	}
	if h.perSub < 1 || h.perSub > 4 {
		return nil, fmt.Errorf("seed: %d deliveries per submission, want 1 to 4", h.perSub)
	}
	step := int64(0)
	if h.n > 1 {
		step = h.to.Sub(h.from).Microseconds() / int64(h.n-1)
	}
	// g: one row per submission, its row number i and its time ts. d: one row per
	// delivery, its counter k (i*4 + 1 .. i*4 + perSub), built LATERAL so that the rows
	// come out in i order and the indexes over the delivery ids grow at their end.
	const g = `(SELECT i, $3::timestamptz + (i - $1) * $4::bigint * interval '1 microsecond' AS ts
	FROM generate_series($1::bigint, $2::bigint) i) g`
	const d = g + `, LATERAL generate_series(i * 4 + 1, i * 4 + $5) k`
	sub, del := v7("ts", "i", "000"), v7("ts", "k", "001")
	stmts := []struct{ table, sql string }{
		{"submissions", `INSERT INTO submissions (id, form, status, data, meta, created_at)
SELECT ` + sub + `, 'contact', 'accepted', '{"message":"bench"}', '{}', ts FROM ` + g},
		{"deliveries", `INSERT INTO deliveries (id, submission_id, route, channel, recipient, status, attempts, max_attempts,
	next_attempt_at, payload, created_at, updated_at, sent_at)
SELECT ` + del + `, ` + sub + `, 'webhook', 'webhook', 'http://127.0.0.1:9/' || (k - i * 4), 'sent', 1, 8,
	ts, '{}', ts, ts, ts FROM ` + d},
	}
	if h.attempts {
		stmts = append(stmts, struct{ table, sql string }{"delivery_attempts", `INSERT INTO delivery_attempts (delivery_id, attempt, provider, started_at, finished_at, outcome, http_status)
SELECT ` + del + `, 1, 'webhook', ts, ts, 'sent', 200 FROM ` + d})
	}
	if h.events {
		stmts = append(stmts, struct{ table, sql string }{"events", `INSERT INTO events (kind, submission_id, data, at)
SELECT 'submission.received', ` + sub + `, '{"form":"contact","status":"accepted"}', ts FROM ` + g})
	}
	// The tables are written two at a time, each on its own connection (nothing checks
	// one table against another while they are written): submissions beside deliveries,
	// then attempts beside events.
	args := []any{h.first, h.first + h.n - 1, h.from, step, h.perSub}
	var out []seedTiming
	for i := 0; i < len(stmts); i += 2 {
		group := stmts[i:min(i+2, len(stmts))]
		res := make([]seedTiming, len(group))
		errs := make([]error, len(group))
		var wg sync.WaitGroup
		for j, st := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[j], errs[j] = seedTable(ctx, pool, st.table, st.sql, args)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return out, err
		}
		out = append(out, res...)
	}
	return out, nil
}

// seedTable runs one table's INSERT on a connection of its own with the foreign-key
// triggers off (see seedHistory).
func seedTable(ctx context.Context, pool *pgxpool.Pool, table, q string, args []any) (seedTiming, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return seedTiming{}, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		logf("  seed %s: foreign-key checks stay on (%v)", table, err)
	}
	// The connection goes back to the pool with the triggers on again.
	defer conn.Exec(context.Background(), `RESET session_replication_role`)
	// Every statement takes the same five parameters; one that does not use $5 still
	// has to give it a type.
	if !strings.Contains(q, "$5") {
		q += ` WHERE $5::int > 0`
	}
	start := time.Now()
	tag, err := conn.Exec(ctx, q, args...)
	if err != nil {
		return seedTiming{}, fmt.Errorf("seed %s: %w", table, err)
	}
	t := seedTiming{table, tag.RowsAffected(), time.Since(start)}
	logf("  seeded %d %s in %v", t.rows, table, t.took.Round(time.Millisecond))
	return t, nil
}

// vacuumAnalyze is what autovacuum does for a production table after a bulk of inserts
// (the bench's server runs with autovacuum off, so the bench does it).
func vacuumAnalyze(ctx context.Context, pool *pgxpool.Pool, tables ...string) (time.Duration, error) {
	start := time.Now()
	q := `VACUUM ANALYZE`
	if len(tables) > 0 {
		ids := make([]string, len(tables))
		for i, t := range tables {
			ids[i] = pgx.Identifier{t}.Sanitize()
		}
		q += " " + strings.Join(ids, ", ")
	}
	_, err := pool.Exec(ctx, q)
	return time.Since(start), err
}
