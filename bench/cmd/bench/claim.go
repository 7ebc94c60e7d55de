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
// Each phase first adds the due rows its claims will take (claims progress through the
// queue as in production, rather than resetting claimed rows, whose dead tuples would be
// measured instead of the query), then the finished history, then VACUUM ANALYZE (what
// autovacuum does for a production table) and a few warm-up claims.
func benchClaim(ctx context.Context, cfg *config, r *report) error {
	const (
		schema = "bench_claim"
		claims = 300
		limit  = 10
		warmup = 20
	)
	_ = dropSchema(ctx, cfg.dsn, schema)
	defer dropSchema(context.Background(), cfg.dsn, schema)
	st, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn, Schema: schema})
	if err != nil {
		return err
	}
	defer st.Close()
	have := 0
	for i, n := range []int{cfg.claimLow, cfg.claimHi} {
		logf("claim latency with %d finished rows", n)
		if err := insertDeliveries(ctx, st.Pool(), (claims+warmup)*limit, "pending"); err != nil {
			return err
		}
		if err := insertDeliveries(ctx, st.Pool(), n-have, "sent"); err != nil {
			return err
		}
		have = n
		if _, err := st.Pool().Exec(ctx, `VACUUM ANALYZE`); err != nil {
			return err
		}
		var lats []time.Duration
		for k := range claims + warmup {
			start := time.Now()
			// The lease outlives the run, so no claimed row comes back as an expired lease.
			ds, err := st.Claim(ctx, outbox.ClaimParams{Owner: "bench", Limit: limit, Lease: 24 * time.Hour, Now: time.Now()})
			if k >= warmup {
				lats = append(lats, time.Since(start))
			}
			if err != nil || len(ds) != limit {
				return fmt.Errorf("claim: %d rows, %v", len(ds), err)
			}
		}
		p50, p99 := percentiles(lats)
		r.claim[i] = [3]time.Duration{time.Duration(n), p50, p99}
	}
	return nil
}
