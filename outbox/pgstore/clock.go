package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// DatabaseNow reads PostgreSQL's clock. Every process sharing the database moves its
// worker's clock onto it (outbox/dbclock.go), so that leases and due times written by one
// are judged on the same clock by all (queries/system.sql).
func (s *Store) DatabaseNow(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := s.pool.QueryRow(ctx, qDatabaseNow).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read database clock: %w", err)
	}
	return t, nil
}

var _ outbox.DatabaseClock = (*Store)(nil)
