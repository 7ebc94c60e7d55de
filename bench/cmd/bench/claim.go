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
func benchClaim(ctx context.Context, cfg *config, r *report) error {
	const schema = "bench_claim"
	_ = dropSchema(ctx, cfg.dsn, schema)
	defer dropSchema(context.Background(), cfg.dsn, schema)
	st, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn, Schema: schema})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := insertDeliveries(ctx, st.Pool(), 100, "pending"); err != nil {
		return err
	}
	have := 0
	for i, n := range []int{cfg.claimLow, cfg.claimHi} {
		logf("claim latency with %d finished rows", n)
		if err := insertDeliveries(ctx, st.Pool(), n-have, "sent"); err != nil {
			return err
		}
		have = n
		if _, err := st.Pool().Exec(ctx, `VACUUM ANALYZE`); err != nil {
			return err
		}
		var lats []time.Duration
		for range 300 {
			start := time.Now()
			ds, err := st.Claim(ctx, outbox.ClaimParams{Owner: "bench", Limit: 10, Lease: time.Minute, Now: time.Now()})
			lats = append(lats, time.Since(start))
			if err != nil || len(ds) != 10 {
				return fmt.Errorf("claim: %d rows, %v", len(ds), err)
			}
			if _, err := st.Pool().Exec(ctx, `UPDATE deliveries SET status = 'pending', lease_token = '', lease_owner = '', locked_until = NULL WHERE status = 'sending'`); err != nil {
				return err
			}
		}
		p50, p99 := percentiles(lats)
		r.claim[i] = [3]time.Duration{time.Duration(n), p50, p99}
	}
	return nil
}
