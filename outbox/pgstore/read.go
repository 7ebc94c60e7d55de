package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func scanSubmission(row pgx.Row) (*outbox.Submission, error) {
	var (
		s          outbox.Submission
		status     string
		data, meta []byte
		key        *string
	)
	if err := row.Scan(&s.ID, &s.Form, &status, &s.Reason, &data, &meta, &key, &s.ContentHash, &s.Test, &s.CreatedAt); err != nil {
		return nil, err
	}
	s.Status = outbox.SubmissionStatus(status)
	if err := json.Unmarshal(data, &s.Data); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if err := json.Unmarshal(meta, &s.Meta); err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	if key != nil {
		s.IdempotencyKey = *key
	}
	s.CreatedAt = s.CreatedAt.UTC()
	return &s, nil
}

func scanDelivery(row pgx.Row) (outbox.Delivery, error) {
	var (
		d                   outbox.Delivery
		channel, status     string
		payload             []byte
		lockedUntil, sentAt *time.Time
	)
	// uuid.UUID scanned as a [16]byte: pgx copies the bytes instead of going through
	// sql.Scanner, which formats the uuid as text and parses it back.
	err := row.Scan((*[16]byte)(&d.ID), (*[16]byte)(&d.SubmissionID), &d.Route, &channel, &d.Recipient, &status, &d.Attempts, &d.MaxAttempts,
		&d.NextAttemptAt, &d.LeaseOwner, &d.LeaseToken, &lockedUntil, &d.LastError, &d.Provider,
		&d.ProviderMessageID, &payload, &d.CreatedAt, &d.UpdatedAt, &sentAt)
	if err != nil {
		return d, err
	}
	d.Channel = outbox.Channel(channel)
	d.Status = outbox.DeliveryStatus(status)
	d.NextAttemptAt = d.NextAttemptAt.UTC()
	d.LockedUntil = utcOrZero(lockedUntil)
	d.Payload = json.RawMessage(payload)
	d.CreatedAt = d.CreatedAt.UTC()
	d.UpdatedAt = d.UpdatedAt.UTC()
	d.SentAt = utcOrZero(sentAt)
	return d, nil
}

func scanAttempt(row pgx.Row) (outbox.Attempt, error) {
	var (
		a       outbox.Attempt
		outcome string
	)
	err := row.Scan((*[16]byte)(&a.DeliveryID), &a.Attempt, &a.Provider, &a.StartedAt, &a.FinishedAt, &outcome,
		&a.HTTPStatus, &a.ErrorCode, &a.Error, &a.ProviderMessageID, &a.BodySHA256)
	if err != nil {
		return a, err
	}
	a.StartedAt = a.StartedAt.UTC()
	a.FinishedAt = a.FinishedAt.UTC()
	a.Outcome = outbox.Outcome(outcome)
	return a, nil
}

func utcOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// orNow lets callers leave a time unset and get the present instead.
func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// GetSubmission returns the stored submission, or outbox.ErrNotFound.
func (s *Store) GetSubmission(ctx context.Context, id uuid.UUID) (*outbox.Submission, error) {
	sub, err := scanSubmission(s.pool.QueryRow(ctx, qGetSubmission, id))
	if isNoRows(err) {
		return nil, fmt.Errorf("get submission %s: %w", id, outbox.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get submission %s: %w", id, err)
	}
	return sub, nil
}

// GetDelivery returns the stored delivery, or outbox.ErrNotFound.
func (s *Store) GetDelivery(ctx context.Context, id uuid.UUID) (*outbox.Delivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, qGetDelivery, id))
	if isNoRows(err) {
		return nil, fmt.Errorf("get delivery %s: %w", id, outbox.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get delivery %s: %w", id, err)
	}
	return &d, nil
}

// ListDeliveries returns a submission's deliveries ordered by route, then recipient.
// An unknown submission has none (no error).
func (s *Store) ListDeliveries(ctx context.Context, submissionID uuid.UUID) ([]outbox.Delivery, error) {
	rows, err := s.pool.Query(ctx, qListDeliveries, submissionID)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return out, nil
}

// ListAttempts returns a delivery's attempts, oldest first.
func (s *Store) ListAttempts(ctx context.Context, deliveryID uuid.UUID) ([]outbox.Attempt, error) {
	rows, err := s.pool.Query(ctx, qListAttempts, deliveryID)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Attempt, error) { return scanAttempt(r) })
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	return out, nil
}

// ListEvents returns events of the given kind ("" = every kind), newest first, at most
// limit of them (limit <= 0: all).
func (s *Store) ListEvents(ctx context.Context, kind string, limit int) ([]outbox.Event, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, qListEvents, kind, lim)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// scanEvent reads a row of id, kind, submission_id, delivery_id, data, at.
func scanEvent(r pgx.CollectableRow) (outbox.Event, error) {
	var (
		e        outbox.Event
		sub, del *uuid.UUID
		data     []byte
	)
	if err := r.Scan(&e.ID, &e.Kind, &sub, &del, &data, &e.At); err != nil {
		return e, err
	}
	if sub != nil {
		e.SubmissionID = *sub
	}
	if del != nil {
		e.DeliveryID = *del
	}
	e.Data = json.RawMessage(data)
	e.At = e.At.UTC()
	return e, nil
}
