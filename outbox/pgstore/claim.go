package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/claimorder"
)

// Claim leases up to p.Limit due deliveries, oldest next_attempt_at first, each with its
// own random lease token. Due-ness is judged against p.Now, never the database clock, so
// tests (and workers) drive time.
func (s *Store) Claim(ctx context.Context, p outbox.ClaimParams) ([]outbox.Delivery, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	if p.Lease <= 0 {
		return nil, errors.New("claim deliveries: lease must be positive")
	}
	now := orNow(p.Now)
	rows, err := s.pool.Query(ctx, claimSQL, now, p.Limit, p.Owner, now.Add(p.Lease))
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
