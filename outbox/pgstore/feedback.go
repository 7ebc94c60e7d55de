package pgstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// RecordFeedback matches, de-duplicates and applies one feedback report in one
// transaction (storeflow.RecordFeedback). The delivery's row lock (FOR UPDATE) orders
// reports about one delivery, and the receipt's primary key makes two instances
// receiving the same message at once safe: the second insert waits for the first
// transaction and then finds the conflict.
func (s *Store) RecordFeedback(ctx context.Context, f outbox.Feedback) (outbox.FeedbackResult, error) {
	return storeflow.RecordFeedback(ctx, flow{s}, f)
}

// ListFeedback returns a delivery's feedback, oldest first.
func (s *Store) ListFeedback(ctx context.Context, deliveryID uuid.UUID) ([]outbox.Feedback, error) {
	rows, err := s.pool.Query(ctx, qListFeedback, deliveryID)
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
	rows, err := s.pool.Query(ctx, qListSuppressions, outbox.PageLimit(limit))
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
	err := s.pool.QueryRow(ctx, qIsSuppressed, outbox.NormalizeAddress(address)).Scan(&found)
	if err != nil {
		return false, fmt.Errorf("check suppression: %w", err)
	}
	return found, nil
}
