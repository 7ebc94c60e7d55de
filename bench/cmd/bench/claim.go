package main

import (
	"context"
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
)

// benchClaim times the claim query with little and with much finished history in the
// tables: the partial due index should make the history irrelevant.
//
// Each size has a schema of its own: first the due rows its claims will take (claims
// progress through the queue as in production, rather than resetting claimed rows,
// whose dead tuples would be measured instead of the query), then the finished history
// (seedHistory: submissions with two sent deliveries each, as the bench's form makes,
// spread over the past year; the finished rows counted are the deliveries), then VACUUM
// ANALYZE of its tables (what autovacuum does for a production table). The claims then
// alternate between the two schemas, the order flipped each time, so that the machine's
// load falls on both sizes alike; the first few of each are warm-up. The history has no
// attempts: the claim reads deliveries only (outbox/pgstore/queries/claim.sql).
func benchClaim(ctx context.Context, cfg *config, r *report) error {
	const (
		claims = 300
		limit  = 10
		warmup = 20
		perSub = 2
	)
	sizes := []int{cfg.claimLow, cfg.claimHi}
	stores := make([]*pgstore.Store, len(sizes))
	for i, n := range sizes {
		schema := fmt.Sprintf("bench_claim_%d", i)
		_ = dropSchema(ctx, cfg.dsn, schema)
		defer dropSchema(context.Background(), cfg.dsn, schema)
		st, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn, Schema: schema})
		if err != nil {
			return err
		}
		defer st.Close()
		stores[i] = st
		logf("claim latency: seeding %d finished rows", n)
		if err := insertDeliveries(ctx, st.Pool(), (claims+warmup)*limit, "pending"); err != nil {
			return err
		}
		t0 := time.Now()
		// The youngest of the history finished two hours ago.
		to := time.Now().Add(-2 * time.Hour)
		h := history{n: n / perSub, perSub: perSub, from: to.Add(-365 * 24 * time.Hour), to: to}
		if _, err := seedHistory(ctx, st.Pool(), h); err != nil {
			return err
		}
		seeded := time.Since(t0)
		vac, err := vacuumAnalyze(ctx, st.Pool(), "submissions", "deliveries")
		if err != nil {
			return err
		}
		logf("  seeded %d finished rows in %v, VACUUM ANALYZE %v", h.n*perSub, seeded.Round(time.Millisecond), vac.Round(time.Millisecond))
		r.claimSeed[i] = [2]time.Duration{seeded, vac}
	}
	lats := make([][]time.Duration, len(sizes))
	for k := range claims + warmup {
		for j := range sizes {
			i := (j + k) % len(sizes)
			start := time.Now()
			// The lease outlives the run, so no claimed row comes back as an expired lease.
			ds, err := stores[i].Claim(ctx, outbox.ClaimParams{Owner: "bench", Limit: limit, Lease: 24 * time.Hour, Now: time.Now()})
			if k >= warmup {
				lats[i] = append(lats[i], time.Since(start))
			}
			if err != nil || len(ds) != limit {
				return fmt.Errorf("claim: %d rows, %v", len(ds), err)
			}
		}
	}
	for i, n := range sizes {
		p50, p99 := percentiles(lats[i])
		r.claim[i] = [3]time.Duration{time.Duration(n), p50, p99}
		logf("  claim with %d finished rows: p50 %v p99 %v", n, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
	}
	return nil
}
