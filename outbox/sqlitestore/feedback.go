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
		if _, err := tx.ExecContext(ctx, qForgetOldReceipts, micros(f.ReceivedAt.Add(-outbox.FeedbackReceiptTTL))); err != nil {
			return err
		}
		r, err := tx.ExecContext(ctx, qInsertReceipt, f.Source, f.ReceiptID, micros(f.ReceivedAt))
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return outbox.ErrFeedbackReplay
		}
		p := outbox.PlanFeedback(d, f)
		if _, err := tx.ExecContext(ctx, qInsertFeedback, d.ID.String(), f.Source, string(f.Kind), f.BounceType,
			outbox.TruncateDiagnostic(f.Diagnostic), f.ProviderMessageID, f.ReceiptID,
			micros(orTime(f.OccurredAt, f.ReceivedAt)), micros(f.ReceivedAt)); err != nil {
			return err
		}
		if p.Dead {
			if _, err := tx.ExecContext(ctx, qBounceDelivery, p.LastError, micros(f.ReceivedAt), d.ID.String()); err != nil {
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
		if _, err := tx.ExecContext(ctx, qInsertEvent, p.Event.Kind, d.SubmissionID.String(), d.ID.String(),
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
		d, err := scanDelivery(tx.QueryRowContext(ctx, qFeedbackDeliveryByID, f.DeliveryID.String()))
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
	d, err := scanDelivery(tx.QueryRowContext(ctx, qFeedbackDeliveryByMessageID, f.ProviderMessageID))
	if errors.Is(err, sql.ErrNoRows) {
		return d, outbox.ErrNotFound
	}
	return d, err
}

// ListFeedback returns a delivery's feedback, oldest first.
func (s *Store) ListFeedback(ctx context.Context, deliveryID uuid.UUID) ([]outbox.Feedback, error) {
	rows, err := s.r.QueryContext(ctx, qListFeedback, deliveryID.String())
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
	r, err := tx.ExecContext(ctx, qInsertSuppression, outbox.NormalizeAddress(sp.Address), sp.Reason, did, micros(orNow(sp.CreatedAt)))
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
		r, err := tx.ExecContext(ctx, qDeleteSuppression, outbox.NormalizeAddress(address))
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
	rows, err := s.r.QueryContext(ctx, qListSuppressions, outbox.PageLimit(limit))
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
	err := s.r.QueryRowContext(ctx, qIsSuppressed, outbox.NormalizeAddress(address)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check suppression: %w", err)
	}
	return true, nil
}
