package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// RecordFeedback matches, de-duplicates and applies one feedback report in one write
// transaction (storeflow.RecordFeedback).
func (s *Store) RecordFeedback(ctx context.Context, f outbox.Feedback) (outbox.FeedbackResult, error) {
	return storeflow.RecordFeedback(ctx, flow{s}, f)
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

// AddSuppression adds an address; an address already listed keeps its first reason.
func (s *Store) AddSuppression(ctx context.Context, sp outbox.Suppression) error {
	return storeflow.AddSuppression(ctx, flow{s}, sp)
}

// RemoveSuppression takes an address off the list.
func (s *Store) RemoveSuppression(ctx context.Context, address string) error {
	return storeflow.RemoveSuppression(ctx, flow{s}, address)
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
