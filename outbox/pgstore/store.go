// Package pgstore is the PostgreSQL outbox.Store (pgx/v5, pgxpool), for production and for
// several Caddy instances sharing one database: claims use FOR UPDATE SKIP LOCKED, every
// later write is fenced by the lease token, and LISTEN/NOTIFY wakes the other instances'
// workers. It owns its schema and migrations.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Name is this store's name where a user picks one: the Caddyfile's `storage postgres
// DSN` and `caddy form-outbox replay --storage postgres DSN`.
const Name = "postgres"

// Config says where the outbox lives.
type Config struct {
	// DSN is a libpq-style URL or key=value string.
	DSN string
	// Schema holds every table; "" uses the connection's default search_path. A named
	// schema is created if missing. Instances sharing a database and a schema share one
	// outbox; different schemas are fully isolated (tests use one each).
	Schema string
	// Lazy makes Open succeed without reaching the server: the schema is migrated on the
	// first connection that succeeds (see lazy.go), so a process can start, and spool,
	// while PostgreSQL is down.
	Lazy bool
}

// Store is an outbox.Store on PostgreSQL. Use Open.
type Store struct {
	pool    *pgxpool.Pool
	schema  string
	channel string

	// Broadcast debouncing; see notify.go.
	mu            sync.Mutex
	notifyPending bool
	lastNotify    time.Time
	notifyTimer   *time.Timer
	notifySends   int64
	notifyWG      sync.WaitGroup
	closed        bool

	// onListening, when set (tests), is called each time Listen has its LISTEN in place.
	// Guarded by mu.
	onListening func()

	lazy lazyMigration // Config.Lazy

	target target // for Explain (explain.go)
}

// Open connects, creates the schema if needed and applies pending migrations under an
// advisory lock, so concurrent Opens on one fresh schema all succeed and migrate once.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: parse DSN: %w", err)
	}
	if cfg.Schema != "" {
		// search_path as a startup parameter holds on every pooled connection, including
		// ones opened after a reconnect; the schema need not exist yet.
		pcfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{cfg.Schema}.Sanitize()
	}
	cc := pcfg.ConnConfig
	s := &Store{schema: cfg.Schema, channel: channelName(cfg.Schema),
		target: target{host: cc.Host, port: cc.Port, database: cc.Database, user: cc.User}}
	if cfg.Lazy {
		pcfg.AfterConnect = s.migrateFirstConn
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	s.pool = pool
	if cfg.Lazy {
		return s, nil
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	return s, nil
}

// Pool exposes the connection pool (shared across Caddy reloads, benchmarks).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres store: %w", err)
	}
	return nil
}

// Close stops pending notifications and closes the pool.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	if s.notifyTimer != nil && s.notifyTimer.Stop() {
		s.notifyPending = false
		s.notifyWG.Done()
	}
	s.mu.Unlock()
	s.notifyWG.Wait()
	s.pool.Close()
	return nil
}

// tx runs fn in one transaction, rolled back when fn fails.
func (s *Store) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
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

var errNoRows = pgx.ErrNoRows

func isNoRows(err error) bool { return errors.Is(err, errNoRows) }

var (
	_ outbox.Store    = (*Store)(nil)
	_ outbox.Notifier = (*Store)(nil)
)
