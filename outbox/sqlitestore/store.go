// Package sqlitestore is the embedded outbox.Store: one SQLite file (modernc.org/sqlite,
// pure Go) in WAL mode with synchronous=FULL, so a commit that returned survives a power
// cut. It owns its schema and migrations.
//
// SQLite allows one writer at a time. Rather than letting concurrent writers race for the
// file lock and fail with SQLITE_BUSY, every write goes through a pool of exactly one
// connection whose transactions begin IMMEDIATE, and the writes waiting at the same
// moment share one transaction and its commit (combine.go); reads use a separate pool
// and see the last committed state (WAL readers never block the writer).
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// busyTimeoutMS bounds how long a write waits for another process holding the file lock.
// Within this process writes are serialized before they reach SQLite.
const busyTimeoutMS = 10000

// Name is this store's name where a user picks one: the Caddyfile's `storage sqlite
// PATH` and `caddy form-outbox replay --storage sqlite PATH`.
const Name = "sqlite"

// readConns is the size of the read pool; WAL lets them run beside the writer.
const readConns = 4

// Store is an outbox.Store on one SQLite file. Use Open.
type Store struct {
	path string
	w    *sql.DB // exactly one connection, BEGIN IMMEDIATE
	r    *sql.DB // readers

	c *combiner // runs every write on w (combine.go)

	pruneMu sync.Mutex // held by the running retention pass; see LockPruner
}

// Open opens (creating if needed) the database file at path, creating its parent
// directory, and applies pending migrations. Re-opening an up-to-date file changes nothing.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenWith(ctx, path, Options{})
}

// Options tune a store; the zero value is what Open uses.
type Options struct {
	// MaxSharedWrites bounds how many writes share one transaction and its commit
	// (combine.go); 0 means the default, 128. 1 gives every write a commit of its own,
	// which is what the bench's one-commit-per-request baseline measures.
	MaxSharedWrites int
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, o Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("open sqlite store: empty path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("open sqlite store: create directory: %w", err)
		}
	}
	if err := createOwnerOnly(path); err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	w, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{path: path, w: w, c: newCombiner(w, o.MaxSharedWrites)}
	if err := s.migrate(ctx); err != nil {
		s.c.stop()
		w.Close()
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	// The read pool opens only after the writer has switched the file to WAL, which is
	// persistent, so readers never see a rollback-journal database.
	r, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		s.c.stop()
		w.Close()
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	r.SetMaxOpenConns(readConns)
	r.SetMaxIdleConns(readConns)
	s.r = r
	if err := r.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	return s, nil
}

// createOwnerOnly creates the database file, empty and readable by its owner only, unless
// it exists. SQLite would create it 0644, and it gives the WAL and shared-memory files it
// creates later the database file's mode, so creating the file first makes all three
// owner-only; O_EXCL leaves an existing file, and the mode its operator chose, alone.
func createOwnerOnly(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return nil
}

// dsn builds the connection string. Pragmas are applied to every new connection by the
// driver, so a reconnect can never come back without them. secure_delete makes SQLite
// overwrite deleted rows with zeros, so an erased submission does not linger in free space
// of the file (see scrubWAL in erase.go for the copies the WAL holds).
func dsn(path string, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "secure_delete(1)")
	if writer {
		q.Add("_pragma", "journal_mode(WAL)")
		// The savepoints of the shared write transaction (combine.go) and of the batches
		// in it keep the pages they change in a statement journal; past 64 KiB SQLite
		// spills it to a temporary file, and its writes were 15% of the CPU of
		// BenchmarkIntakeWithWorker (combine_bench_test.go), and an erased row's old page
		// could linger in that file. In memory it holds at most the pages one transaction
		// changes, and it is never what makes a commit durable (the WAL is).
		q.Add("_pragma", "temp_store(MEMORY)")
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Ping checks that both pools can reach the file.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("ping sqlite store: %w", err)
	}
	if err := s.r.PingContext(ctx); err != nil {
		return fmt.Errorf("ping sqlite store: %w", err)
	}
	return nil
}

// Close lets the writes already handed to the store commit, then closes both pools.
// Writes handed to it later fail.
func (s *Store) Close() error {
	s.c.stop()
	var errs []error
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sqlite store: %w", err)
	}
	return nil
}

var _ outbox.Store = (*Store)(nil)
