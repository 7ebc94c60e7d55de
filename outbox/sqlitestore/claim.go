package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/claimorder"
)

// Claim leases up to p.Limit due deliveries, oldest next_attempt_at first. It is one
// UPDATE inside an IMMEDIATE transaction on the single writer, so two claimers (even in
// two processes sharing the file) can never lease the same row. Each row gets its own
// random lease token.
func (s *Store) Claim(ctx context.Context, p outbox.ClaimParams) ([]outbox.Delivery, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	if p.Lease <= 0 {
		return nil, errors.New("claim deliveries: lease must be positive")
	}
	at := orNow(p.Now)
	now, until := micros(at), micros(at.Add(p.Lease))
	var out []outbox.Delivery
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
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
