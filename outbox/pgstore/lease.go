package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// Every write after a claim is fenced: it matches the row only while the row is still
// sending under the caller's lease token. Zero rows matched means another worker owns the
// delivery now (or it was finished), and the caller gets outbox.ErrLeaseLost with nothing
// written.
//
// A delivery id is passed as a [16]byte, which pgx encodes as a uuid directly; a
// uuid.UUID would go through its driver.Valuer, formatted as text and parsed back, on
// every lease renewal and release.

// Renew moves locked_until of a lease the caller still holds.
func (s *Store) Renew(ctx context.Context, id uuid.UUID, token string, lockedUntil time.Time) error {
	tag, err := s.pool.Exec(ctx, qRenew,
		[16]byte(id), token, lockedUntil)
	if err := fenced(tag, err); err != nil {
		return fmt.Errorf("renew lease of delivery %s: %w", id, err)
	}
	return nil
}

// Release gives a lease back without charging the attempt the claim counted: attempts-1,
// lease cleared, due at now. The status becomes failed when earlier attempts remain on
// the count (a retry was already scheduled before this claim) and pending otherwise;
// both are due statuses, the difference is only what an operator reads.
func (s *Store) Release(ctx context.Context, id uuid.UUID, token string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, qRelease,
		[16]byte(id), token, orNow(now))
	if err := fenced(tag, err); err != nil {
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
