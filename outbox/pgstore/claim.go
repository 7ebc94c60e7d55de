package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/claimorder"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// Claim leases up to p.Limit due deliveries, oldest next_attempt_at first, each with its
// own random lease token. Due-ness is judged against p.Now, never the database clock, so
// tests (and workers) drive time.
func (s *Store) Claim(ctx context.Context, p outbox.ClaimParams) ([]outbox.Delivery, error) {
	now, until, ok, err := storeflow.ClaimWindow(p)
	if !ok {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, claimSQL, now, p.Limit, p.Owner, until)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	claimorder.Sort(out)
	return out, nil
}
