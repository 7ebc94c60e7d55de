package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

type scanner interface{ Scan(dest ...any) error }

func scanSubmission(row scanner) (*outbox.Submission, error) {
	var (
		s          outbox.Submission
		id, status string
		data, meta string
		key        sql.NullString
		created    int64
	)
	if err := row.Scan(&id, &s.Form, &status, &s.Reason, &data, &meta, &key, &s.ContentHash, &s.Test, &created); err != nil {
		return nil, err
	}
	var err error
	if s.ID, err = uuid.Parse(id); err != nil {
		return nil, err
	}
	s.Status = outbox.SubmissionStatus(status)
	if err := json.Unmarshal([]byte(data), &s.Data); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if err := json.Unmarshal([]byte(meta), &s.Meta); err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	s.IdempotencyKey = key.String
	s.CreatedAt = fromMicros(created)
	return &s, nil
}

func scanDelivery(row scanner) (outbox.Delivery, error) {
	var (
		d                          outbox.Delivery
		id, subID, channel, status string
		payload                    string
		next, created, updated     int64
		lockedUntil, sentAt        sql.NullInt64
	)
	err := row.Scan(&id, &subID, &d.Route, &channel, &d.Recipient, &status, &d.Attempts, &d.MaxAttempts,
		&next, &d.LeaseOwner, &d.LeaseToken, &lockedUntil, &d.LastError, &d.Provider,
		&d.ProviderMessageID, &payload, &created, &updated, &sentAt)
	if err != nil {
		return d, err
	}
	if d.ID, err = uuid.Parse(id); err != nil {
		return d, err
	}
	if d.SubmissionID, err = uuid.Parse(subID); err != nil {
		return d, err
	}
	d.Channel = outbox.Channel(channel)
	d.Status = outbox.DeliveryStatus(status)
	d.NextAttemptAt = fromMicros(next)
	d.LockedUntil = fromNullMicros(lockedUntil)
	d.Payload = json.RawMessage(payload)
	d.CreatedAt = fromMicros(created)
	d.UpdatedAt = fromMicros(updated)
	d.SentAt = fromNullMicros(sentAt)
	return d, nil
}

func scanAttempt(row scanner) (outbox.Attempt, error) {
	var (
		a                 outbox.Attempt
		id, outcome       string
		started, finished int64
	)
	err := row.Scan(&id, &a.Attempt, &a.Provider, &started, &finished, &outcome,
		&a.HTTPStatus, &a.ErrorCode, &a.Error, &a.ProviderMessageID, &a.BodySHA256)
	if err != nil {
		return a, err
	}
	if a.DeliveryID, err = uuid.Parse(id); err != nil {
		return a, err
	}
	a.StartedAt = fromMicros(started)
	a.FinishedAt = fromMicros(finished)
	a.Outcome = outbox.Outcome(outcome)
	return a, nil
}

// GetSubmission returns the stored submission, or outbox.ErrNotFound.
func (s *Store) GetSubmission(ctx context.Context, id uuid.UUID) (*outbox.Submission, error) {
	row := s.r.QueryRowContext(ctx, qGetSubmission, id.String())
	sub, err := scanSubmission(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get submission %s: %w", id, outbox.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get submission %s: %w", id, err)
	}
	return sub, nil
}

// GetDelivery returns the stored delivery, or outbox.ErrNotFound.
func (s *Store) GetDelivery(ctx context.Context, id uuid.UUID) (*outbox.Delivery, error) {
	row := s.r.QueryRowContext(ctx, qGetDelivery, id.String())
	d, err := scanDelivery(row)
	if errors.Is(err, sql.ErrNoRows) {
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
	rows, err := s.r.QueryContext(ctx, qListDeliveries, submissionID.String())
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	var out []outbox.Delivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, fmt.Errorf("list deliveries: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return out, nil
}

// ListAttempts returns a delivery's attempts, oldest first.
func (s *Store) ListAttempts(ctx context.Context, deliveryID uuid.UUID) ([]outbox.Attempt, error) {
	rows, err := s.r.QueryContext(ctx, qListAttempts, deliveryID.String())
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	defer rows.Close()
	var out []outbox.Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, fmt.Errorf("list attempts: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	return out, nil
}

// ListEvents returns events of the given kind ("" = every kind), newest first, at most
// limit of them (limit <= 0: all).
func (s *Store) ListEvents(ctx context.Context, kind string, limit int) ([]outbox.Event, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.r.QueryContext(ctx, qListEvents, kind, kind, limit)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	out, err := scanEvents(rows)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// scanEvents reads rows of id, kind, submission_id, delivery_id, data, at.
func scanEvents(rows *sql.Rows) ([]outbox.Event, error) {
	var out []outbox.Event
	for rows.Next() {
		var (
			e        outbox.Event
			sub, del sql.NullString
			data     string
			at       int64
		)
		if err := rows.Scan(&e.ID, &e.Kind, &sub, &del, &data, &at); err != nil {
			return nil, err
		}
		var err error
		if sub.Valid {
			if e.SubmissionID, err = uuid.Parse(sub.String); err != nil {
				return nil, err
			}
		}
		if del.Valid {
			if e.DeliveryID, err = uuid.Parse(del.String); err != nil {
				return nil, err
			}
		}
		e.Data = json.RawMessage(data)
		e.At = fromMicros(at)
		out = append(out, e)
	}
	return out, rows.Err()
}
