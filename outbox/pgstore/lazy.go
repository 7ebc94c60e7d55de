package pgstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// lazyMigration runs the migrations once, on the first pooled connection that reaches
// the server, for stores opened with Config.Lazy. Until they succeed every new connection
// retries them and fails if they fail, so no query ever runs against a missing table.
type lazyMigration struct {
	mu   sync.Mutex
	done atomic.Bool
}

// migrateFirstConn is the pool's AfterConnect hook. It migrates on conn itself: taking
// another connection from the pool here could wait for the very connection being made.
func (s *Store) migrateFirstConn(ctx context.Context, conn *pgx.Conn) error {
	if s.lazy.done.Load() {
		return nil
	}
	s.lazy.mu.Lock()
	defer s.lazy.mu.Unlock()
	if s.lazy.done.Load() {
		return nil
	}
	if err := s.migrateOn(ctx, conn); err != nil {
		return fmt.Errorf("postgres store: first connection: %w", err)
	}
	s.lazy.done.Store(true)
	return nil
}

// beginner is a pool or a single connection.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// txOn runs fn in one transaction on db, rolled back when fn fails.
func txOn(ctx context.Context, db beginner, fn func(tx pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		// The rollback error adds nothing: fn's error is the cause.
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	return tx.Commit(ctx)
}
