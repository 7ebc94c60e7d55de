package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Every write after a claim is fenced: it matches the row only while the row is still
// sending under the caller's lease token. Zero rows matched means another worker owns the
// delivery now (or it was finished), and the caller gets outbox.ErrLeaseLost with nothing
// written.

// Renew moves locked_until of a lease the caller still holds.
func (s *Store) Renew(ctx context.Context, id uuid.UUID, token string, lockedUntil time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE deliveries SET locked_until = $3
		WHERE id = $1 AND status = 'sending' AND lease_token = $2 AND lease_token <> ''`,
		id, token, lockedUntil)
	if err := fenced(tag, err); err != nil {
		return fmt.Errorf("renew lease of delivery %s: %w", id, err)
	}
	return nil
}

// Complete records the attempt and the delivery's new state in one transaction, fenced by
// the lease token. The lease is cleared. The attempt row's number is c.Attempt.Attempt
// (or the delivery's attempts when zero), raised past any number already in the history
// so that attempts after a manual retry (which resets the budget) never collide with the
// earlier ones. A zero c.Event.SubmissionID / DeliveryID / At are filled from the delivery
// and c.Now.
func (s *Store) Complete(ctx context.Context, c outbox.Completion) error {
	switch c.Status {
	case outbox.DeliverySent, outbox.DeliveryFailed, outbox.DeliveryDead:
	default:
		return fmt.Errorf("complete delivery %s: status %q is not sent, failed or dead", c.DeliveryID, c.Status)
	}
	now := orNow(c.Now)
	next := c.NextAttemptAt
	if next.IsZero() {
		next = now
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var (
			subID    uuid.UUID
			attempts int
		)
		err := tx.QueryRow(ctx, `UPDATE deliveries SET
				status = $1,
				next_attempt_at = CASE WHEN $1 = 'failed' THEN $2 ELSE next_attempt_at END,
				last_error = $3,
				provider = $4,
				provider_message_id = $5,
				lease_owner = '',
				lease_token = '',
				locked_until = NULL,
				updated_at = $6,
				sent_at = CASE WHEN $1 = 'sent' THEN $6 ELSE sent_at END
			WHERE id = $7 AND status = 'sending' AND lease_token = $8 AND lease_token <> ''
			RETURNING submission_id, attempts`,
			string(c.Status), next, c.LastError, c.Provider, c.ProviderMessageID,
			now, c.DeliveryID, c.LeaseToken).Scan(&subID, &attempts)
		if isNoRows(err) {
			return outbox.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("update delivery: %w", err)
		}
		a := c.Attempt
		if a.Attempt <= 0 {
			a.Attempt = attempts
		}
		// The fenced UPDATE above holds the delivery's row lock, so no other writer can
		// number an attempt of this delivery until we commit.
		if _, err := tx.Exec(ctx, `INSERT INTO delivery_attempts (`+attemptColumns+`)
			SELECT $1, GREATEST($2, COALESCE(MAX(attempt), 0) + 1), $3, $4, $5, $6, $7, $8, $9, $10
			FROM delivery_attempts WHERE delivery_id = $1`,
			c.DeliveryID, a.Attempt, a.Provider, orTime(a.StartedAt, now), orTime(a.FinishedAt, now),
			string(a.Outcome), a.HTTPStatus, a.ErrorCode, a.Error, a.ProviderMessageID); err != nil {
			return fmt.Errorf("insert attempt: %w", err)
		}
		if c.Event != nil {
			e := *c.Event
			if e.SubmissionID == uuid.Nil {
				e.SubmissionID = subID
			}
			if e.DeliveryID == uuid.Nil {
				e.DeliveryID = c.DeliveryID
			}
			data := string(e.Data)
			if len(e.Data) == 0 {
				data = string(json.RawMessage("{}"))
			}
			if _, err := tx.Exec(ctx, `INSERT INTO events (kind, submission_id, delivery_id, data, at)
				VALUES ($1, $2, $3, $4, $5)`,
				e.Kind, e.SubmissionID, e.DeliveryID, data, orTime(e.At, now)); err != nil {
				return fmt.Errorf("insert event: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("complete delivery %s: %w", c.DeliveryID, err)
	}
	return nil
}

// Release gives a lease back without charging the attempt the claim counted: attempts-1,
// lease cleared, due at now. The status becomes failed when earlier attempts remain on
// the count (a retry was already scheduled before this claim) and pending otherwise;
// both are due statuses, the difference is only what an operator reads.
func (s *Store) Release(ctx context.Context, id uuid.UUID, token string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE deliveries SET
			status = CASE WHEN attempts - 1 > 0 THEN 'failed' ELSE 'pending' END,
			attempts = GREATEST(attempts - 1, 0),
			lease_owner = '',
			lease_token = '',
			locked_until = NULL,
			next_attempt_at = $3,
			updated_at = $3
		WHERE id = $1 AND status = 'sending' AND lease_token = $2 AND lease_token <> ''`,
		id, token, orNow(now))
	if err := fenced(tag, err); err != nil {
		return fmt.Errorf("release lease of delivery %s: %w", id, err)
	}
	return nil
}

// Retry makes a dead or failed delivery pending with attempts = 0, due at now. last_error
// is kept so the operator still sees why it stopped; the attempts history is untouched.
func (s *Store) Retry(ctx context.Context, id uuid.UUID, now time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE deliveries SET status = 'pending', attempts = 0,
			next_attempt_at = $2, updated_at = $2
		WHERE id = $1 AND status IN ('dead', 'failed')`, id, orNow(now))
	if err != nil {
		return fmt.Errorf("retry delivery %s: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deliveries WHERE id = $1)`, id).Scan(&exists); err != nil {
		return fmt.Errorf("retry delivery %s: %w", id, err)
	}
	if !exists {
		return fmt.Errorf("retry delivery %s: %w", id, outbox.ErrNotFound)
	}
	return fmt.Errorf("retry delivery %s: %w", id, outbox.ErrNotRetryable)
}

// fenced turns "no row matched" into ErrLeaseLost.
func fenced(tag pgconn.CommandTag, err error) error {
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return outbox.ErrLeaseLost
	}
	return nil
}

func orTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}
