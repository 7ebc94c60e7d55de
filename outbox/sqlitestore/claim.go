package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/claimorder"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// Claim leases up to p.Limit due deliveries, oldest next_attempt_at first. It is one
// UPDATE inside an IMMEDIATE transaction on the single writer, so two claimers (even in
// two processes sharing the file) can never lease the same row. Each row gets its own
// random lease token.
func (s *Store) Claim(ctx context.Context, p outbox.ClaimParams) ([]outbox.Delivery, error) {
	// The claim commits without waiting for the WAL's fsync (lazyWriteTx), as on
	// PostgreSQL (docs/design.md, 'Claims and leases'): the single writer is not held
	// for a flush that only protects a lease. A power loss may lose the lease, never the
	// delivery, which is then due again and sent again (at-least-once).
	return s.claim(ctx, p, s.lazyWriteTx)
}

// claim is Claim in the transaction writeTx makes.
func (s *Store) claim(ctx context.Context, p outbox.ClaimParams, writeTx func(context.Context, func(*sql.Tx) error) error) ([]outbox.Delivery, error) {
	at, end, ok, err := storeflow.ClaimWindow(p)
	if !ok {
		return nil, err
	}
	now, until := micros(at), micros(end)
	var out []outbox.Delivery
	err = writeTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, qClaim,
			p.Owner, until, now, now, now, p.Limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	claimorder.Sort(out)
	return out, nil
}
