package sqlitestore

import (
	"context"
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/claimorder"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// Claim leases up to p.Limit due deliveries, oldest next_attempt_at first. It is one
// UPDATE inside an IMMEDIATE transaction on the single writer (the shared one of
// combine.go), so two claimers (even in two processes sharing the file) can never lease
// the same row. Each row gets its own
// random lease token.
func (s *Store) Claim(ctx context.Context, p outbox.ClaimParams) ([]outbox.Delivery, error) {
	at, end, ok, err := storeflow.ClaimWindow(p)
	if !ok {
		return nil, err
	}
	now, until := micros(at), micros(end)
	var out []outbox.Delivery
	err = s.writeTx(ctx, func(tx *txStmts) error {
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
