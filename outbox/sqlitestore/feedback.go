package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// RecordFeedback matches, de-duplicates and applies one feedback report in one write
// transaction (see outbox.FeedbackStore).
func (s *Store) RecordFeedback(ctx context.Context, f outbox.Feedback) (outbox.FeedbackResult, error) {
	f.ReceivedAt = orNow(f.ReceivedAt)
	var res outbox.FeedbackResult
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		d, err := feedbackDelivery(ctx, tx, f)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM feedback_receipts WHERE received_at < ?`,
			micros(f.ReceivedAt.Add(-outbox.FeedbackReceiptTTL))); err != nil {
			return err
		}
		r, err := tx.ExecContext(ctx, `INSERT INTO feedback_receipts (source, receipt_id, received_at)
			VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, f.Source, f.ReceiptID, micros(f.ReceivedAt))
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return outbox.ErrFeedbackReplay
		}
		p := outbox.PlanFeedback(d, f)
		if _, err := tx.ExecContext(ctx, `INSERT INTO delivery_feedback (delivery_id, source, kind,
				bounce_type, diagnostic, provider_message_id, receipt_id, occurred_at, received_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, d.ID.String(), f.Source, string(f.Kind), f.BounceType,
			outbox.TruncateDiagnostic(f.Diagnostic), f.ProviderMessageID, f.ReceiptID,
			micros(orTime(f.OccurredAt, f.ReceivedAt)), micros(f.ReceivedAt)); err != nil {
			return err
		}
		if p.Dead {
			if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = 'dead', last_error = ?,
					updated_at = ? WHERE id = ? AND status = 'sent'`,
				p.LastError, micros(f.ReceivedAt), d.ID.String()); err != nil {
				return err
			}
			d.Status, d.LastError, d.UpdatedAt = outbox.DeliveryDead, p.LastError, f.ReceivedAt
		}
		if p.Suppress != nil {
			n, err := addSuppression(ctx, tx, *p.Suppress)
			if err != nil {
				return err
			}
			res.Suppressed = n > 0
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (kind, submission_id, delivery_id, data, at)
			VALUES (?, ?, ?, ?, ?)`, p.Event.Kind, d.SubmissionID.String(), d.ID.String(),
			string(p.Event.Data), micros(p.Event.At)); err != nil {
			return err
		}
		res.Delivery, res.Dead = d, p.Dead
		return nil
	})
	if err != nil {
		return outbox.FeedbackResult{}, fmt.Errorf("record %s feedback %s: %w", f.Source, f.ReceiptID, err)
	}
	return res, nil
}

// feedbackDelivery finds the delivery a report is about: by the id it carries, else by
// the provider's message id (email deliveries only).
func feedbackDelivery(ctx context.Context, tx *sql.Tx, f outbox.Feedback) (outbox.Delivery, error) {
	if f.DeliveryID != uuid.Nil {
		d, err := scanDelivery(tx.QueryRowContext(ctx, `SELECT `+deliveryColumns+` FROM deliveries
			WHERE id = ? AND channel IN ('email', 'autoreply')`, f.DeliveryID.String()))
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return d, err
		}
	}
	if f.ProviderMessageID == "" {
		return outbox.Delivery{}, outbox.ErrNotFound
	}
	d, err := scanDelivery(tx.QueryRowContext(ctx, `SELECT `+deliveryColumns+` FROM deliveries
		WHERE provider_message_id = ? AND channel IN ('email', 'autoreply') LIMIT 1`, f.ProviderMessageID))
	if errors.Is(err, sql.ErrNoRows) {
		return d, outbox.ErrNotFound
	}
	return d, err
}

// ListFeedback returns a delivery's feedback, oldest first.
func (s *Store) ListFeedback(ctx context.Context, deliveryID uuid.UUID) ([]outbox.Feedback, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT delivery_id, source, kind, bounce_type, diagnostic,
			provider_message_id, receipt_id, occurred_at, received_at
		FROM delivery_feedback WHERE delivery_id = ? ORDER BY id`, deliveryID.String())
	if err != nil {
		return nil, fmt.Errorf("list feedback of %s: %w", deliveryID, err)
	}
	defer rows.Close()
	var out []outbox.Feedback
	for rows.Next() {
		var (
			f             outbox.Feedback
			id, kind      string
			occ, received int64
		)
		if err := rows.Scan(&id, &f.Source, &kind, &f.BounceType, &f.Diagnostic,
			&f.ProviderMessageID, &f.ReceiptID, &occ, &received); err != nil {
			return nil, fmt.Errorf("list feedback of %s: %w", deliveryID, err)
		}
		f.DeliveryID, err = uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("list feedback of %s: %w", deliveryID, err)
		}
		f.Kind = outbox.FeedbackKind(kind)
		f.OccurredAt, f.ReceivedAt = fromMicros(occ), fromMicros(received)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list feedback of %s: %w", deliveryID, err)
	}
	return out, nil
}

func addSuppression(ctx context.Context, tx *sql.Tx, sp outbox.Suppression) (int64, error) {
	var did sql.NullString
	if sp.DeliveryID != uuid.Nil {
		did = sql.NullString{String: sp.DeliveryID.String(), Valid: true}
	}
	r, err := tx.ExecContext(ctx, `INSERT INTO suppressions (address, reason, delivery_id, created_at)
		VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		outbox.NormalizeAddress(sp.Address), sp.Reason, did, micros(orNow(sp.CreatedAt)))
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// AddSuppression adds an address; an address already listed keeps its first reason.
func (s *Store) AddSuppression(ctx context.Context, sp outbox.Suppression) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := addSuppression(ctx, tx, sp)
		return err
	})
	if err != nil {
		return fmt.Errorf("add suppression: %w", err)
	}
	return nil
}

// RemoveSuppression takes an address off the list.
func (s *Store) RemoveSuppression(ctx context.Context, address string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `DELETE FROM suppressions WHERE address = ?`, outbox.NormalizeAddress(address))
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return outbox.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("remove suppression: %w", err)
	}
	return nil
}

// ListSuppressions returns the newest suppressions first.
func (s *Store) ListSuppressions(ctx context.Context, limit int) ([]outbox.Suppression, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT address, reason, delivery_id, created_at FROM suppressions
		ORDER BY created_at DESC, address LIMIT ?`, outbox.PageLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list suppressions: %w", err)
	}
	defer rows.Close()
	var out []outbox.Suppression
	for rows.Next() {
		var (
			sp      outbox.Suppression
			did     sql.NullString
			created int64
		)
		if err := rows.Scan(&sp.Address, &sp.Reason, &did, &created); err != nil {
			return nil, fmt.Errorf("list suppressions: %w", err)
		}
		if did.Valid {
			if sp.DeliveryID, err = uuid.Parse(did.String); err != nil {
				return nil, fmt.Errorf("list suppressions: %w", err)
			}
		}
		sp.CreatedAt = fromMicros(created)
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list suppressions: %w", err)
	}
	return out, nil
}

// IsSuppressed reports whether address is on the list.
func (s *Store) IsSuppressed(ctx context.Context, address string) (bool, error) {
	var one int
	err := s.r.QueryRowContext(ctx, `SELECT 1 FROM suppressions WHERE address = ?`,
		outbox.NormalizeAddress(address)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check suppression: %w", err)
	}
	return true, nil
}
