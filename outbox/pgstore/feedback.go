package pgstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// RecordFeedback matches, de-duplicates and applies one feedback report in one
// transaction (see outbox.FeedbackStore). The receipt's primary key makes two instances
// receiving the same message at once safe: the second insert waits for the first
// transaction and then finds the conflict.
func (s *Store) RecordFeedback(ctx context.Context, f outbox.Feedback) (outbox.FeedbackResult, error) {
	f.ReceivedAt = orNow(f.ReceivedAt)
	var res outbox.FeedbackResult
	err := s.tx(ctx, func(tx pgx.Tx) error {
		d, err := feedbackDelivery(ctx, tx, f)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM feedback_receipts WHERE received_at < $1`,
			f.ReceivedAt.Add(-outbox.FeedbackReceiptTTL)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO feedback_receipts (source, receipt_id, received_at)
			VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, f.Source, f.ReceiptID, f.ReceivedAt)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return outbox.ErrFeedbackReplay
		}
		p := outbox.PlanFeedback(d, f)
		if _, err := tx.Exec(ctx, `INSERT INTO delivery_feedback (delivery_id, source, kind,
				bounce_type, diagnostic, provider_message_id, receipt_id, occurred_at, received_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, d.ID, f.Source, string(f.Kind), f.BounceType,
			outbox.TruncateDiagnostic(f.Diagnostic), f.ProviderMessageID, f.ReceiptID,
			orTime(f.OccurredAt, f.ReceivedAt), f.ReceivedAt); err != nil {
			return err
		}
		if p.Dead {
			if _, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'dead', last_error = $1,
					updated_at = $2 WHERE id = $3 AND status = 'sent'`,
				p.LastError, f.ReceivedAt, d.ID); err != nil {
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
		if _, err := tx.Exec(ctx, `INSERT INTO events (kind, submission_id, delivery_id, data, at)
			VALUES ($1, $2, $3, $4, $5)`, p.Event.Kind, d.SubmissionID, d.ID,
			string(p.Event.Data), p.Event.At); err != nil {
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

// feedbackDelivery finds (and locks) the delivery a report is about: by the id it
// carries, else by the provider's message id (email deliveries only).
func feedbackDelivery(ctx context.Context, tx pgx.Tx, f outbox.Feedback) (outbox.Delivery, error) {
	if f.DeliveryID != uuid.Nil {
		d, err := scanDelivery(tx.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM deliveries
			WHERE id = $1 AND channel IN ('email', 'autoreply') FOR UPDATE`, f.DeliveryID))
		if err == nil {
			return d, nil
		}
		if !isNoRows(err) {
			return d, err
		}
	}
	if f.ProviderMessageID == "" {
		return outbox.Delivery{}, outbox.ErrNotFound
	}
	d, err := scanDelivery(tx.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM deliveries
		WHERE provider_message_id = $1 AND channel IN ('email', 'autoreply') LIMIT 1 FOR UPDATE`, f.ProviderMessageID))
	if isNoRows(err) {
		return d, outbox.ErrNotFound
	}
	return d, err
}

// ListFeedback returns a delivery's feedback, oldest first.
func (s *Store) ListFeedback(ctx context.Context, deliveryID uuid.UUID) ([]outbox.Feedback, error) {
	rows, err := s.pool.Query(ctx, `SELECT delivery_id, source, kind, bounce_type, diagnostic,
			provider_message_id, receipt_id, occurred_at, received_at
		FROM delivery_feedback WHERE delivery_id = $1 ORDER BY id`, deliveryID)
	if err != nil {
		return nil, fmt.Errorf("list feedback of %s: %w", deliveryID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Feedback, error) {
		var (
			f    outbox.Feedback
			kind string
		)
		err := r.Scan(&f.DeliveryID, &f.Source, &kind, &f.BounceType, &f.Diagnostic,
			&f.ProviderMessageID, &f.ReceiptID, &f.OccurredAt, &f.ReceivedAt)
		f.Kind = outbox.FeedbackKind(kind)
		f.OccurredAt, f.ReceivedAt = f.OccurredAt.UTC(), f.ReceivedAt.UTC()
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("list feedback of %s: %w", deliveryID, err)
	}
	return out, nil
}

func addSuppression(ctx context.Context, tx pgx.Tx, sp outbox.Suppression) (int64, error) {
	var did *uuid.UUID
	if sp.DeliveryID != uuid.Nil {
		did = &sp.DeliveryID
	}
	tag, err := tx.Exec(ctx, `INSERT INTO suppressions (address, reason, delivery_id, created_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
		outbox.NormalizeAddress(sp.Address), sp.Reason, did, orNow(sp.CreatedAt))
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// AddSuppression adds an address; an address already listed keeps its first reason.
func (s *Store) AddSuppression(ctx context.Context, sp outbox.Suppression) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
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
	tag, err := s.pool.Exec(ctx, `DELETE FROM suppressions WHERE address = $1`, outbox.NormalizeAddress(address))
	if err != nil {
		return fmt.Errorf("remove suppression: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("remove suppression: %w", outbox.ErrNotFound)
	}
	return nil
}

// ListSuppressions returns the newest suppressions first.
func (s *Store) ListSuppressions(ctx context.Context, limit int) ([]outbox.Suppression, error) {
	rows, err := s.pool.Query(ctx, `SELECT address, reason, delivery_id, created_at FROM suppressions
		ORDER BY created_at DESC, address LIMIT $1`, outbox.PageLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list suppressions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Suppression, error) {
		var (
			sp  outbox.Suppression
			did *uuid.UUID
		)
		err := r.Scan(&sp.Address, &sp.Reason, &did, &sp.CreatedAt)
		if did != nil {
			sp.DeliveryID = *did
		}
		sp.CreatedAt = sp.CreatedAt.UTC()
		return sp, err
	})
	if err != nil {
		return nil, fmt.Errorf("list suppressions: %w", err)
	}
	return out, nil
}

// IsSuppressed reports whether address is on the list.
func (s *Store) IsSuppressed(ctx context.Context, address string) (bool, error) {
	var found bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM suppressions WHERE address = $1)`,
		outbox.NormalizeAddress(address)).Scan(&found)
	if err != nil {
		return false, fmt.Errorf("check suppression: %w", err)
	}
	return found, nil
}
