package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// Every write after a claim is fenced: it matches the row only while the row is still
// sending under the caller's lease token. Zero rows matched means another worker owns the
// delivery now (or it was finished), and the caller gets outbox.ErrLeaseLost with nothing
// written.

// Renew moves locked_until of a lease the caller still holds.
func (s *Store) Renew(ctx context.Context, id uuid.UUID, token string, lockedUntil time.Time) error {
	err := s.writeTx(ctx, func(tx *txStmts) error {
		res, err := tx.ExecContext(ctx, qRenew,
			micros(lockedUntil), id.String(), token)
		return fenced(res, err)
	})
	if err != nil {
		return fmt.Errorf("renew lease of delivery %s: %w", id, err)
	}
	return nil
}

// completeIn records one completion inside the caller's write transaction (see
// outbox.BatchCompleter), on a completion completion.Plan has checked and filled.
func completeIn(ctx context.Context, tx txQuerier, c outbox.Completion) error {
	var (
		subID    string
		attempts int
	)
	err := tx.QueryRowContext(ctx, qCompleteDelivery,
		string(c.Status), micros(c.NextAttemptAt), c.LastError, c.Provider, c.ProviderMessageID,
		micros(c.Now), c.DeliveryID.String(), c.LeaseToken).Scan(&subID, &attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return outbox.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("update delivery: %w", err)
	}
	a := c.Attempt
	if a.Attempt <= 0 {
		a.Attempt = attempts
	}
	var last int
	if err := tx.QueryRowContext(ctx, qLastAttempt, c.DeliveryID.String()).Scan(&last); err != nil {
		return fmt.Errorf("number attempt: %w", err)
	}
	a.Attempt = max(a.Attempt, last+1)
	if _, err := tx.ExecContext(ctx, qInsertAttempt,
		c.DeliveryID.String(), a.Attempt, a.Provider, micros(a.StartedAt),
		micros(a.FinishedAt), string(a.Outcome), a.HTTPStatus, a.ErrorCode, a.Error,
		a.ProviderMessageID, a.BodySHA256); err != nil {
		return fmt.Errorf("insert attempt: %w", err)
	}
	if c.Event != nil {
		e := *c.Event
		if e.SubmissionID == uuid.Nil {
			if e.SubmissionID, err = uuid.Parse(subID); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, qInsertDeliveryEvent,
			e.Kind, e.SubmissionID.String(), e.DeliveryID.String(), string(e.Data), micros(e.At)); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
	}
	return nil
}

// Release gives a lease back without charging the attempt the claim counted: attempts-1,
// lease cleared, due at now. The status becomes failed when earlier attempts remain on
// the count (a retry was already scheduled before this claim) and pending otherwise;
// both are due statuses, the difference is only what an operator reads.
func (s *Store) Release(ctx context.Context, id uuid.UUID, token string, now time.Time) error {
	now = orNow(now)
	err := s.writeTx(ctx, func(tx *txStmts) error {
		res, err := tx.ExecContext(ctx, qRelease,
			micros(now), id.String(), token)
		return fenced(res, err)
	})
	if err != nil {
		return fmt.Errorf("release lease of delivery %s: %w", id, err)
	}
	return nil
}

// Retry makes a dead or failed delivery pending with attempts = 0, due at now
// (storeflow.Retry).
func (s *Store) Retry(ctx context.Context, id uuid.UUID, now time.Time) error {
	return storeflow.Retry(ctx, flow{s}, id, now)
}

// fenced turns "no row matched" into ErrLeaseLost.
func fenced(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
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
