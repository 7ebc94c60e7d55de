package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
)

// EnvDatabaseURL names the environment variable holding the test PostgreSQL DSN.
const EnvDatabaseURL = "FORM_OUTBOX_TEST_DATABASE_URL"

// DefaultDatabaseURL is used when EnvDatabaseURL is unset.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// OpenSQLite opens a store on a fresh file in t's temporary directory, closed at cleanup.
func OpenSQLite(t testing.TB) outbox.Store {
	t.Helper()
	return OpenSQLiteAt(t, filepath.Join(t.TempDir(), "outbox.db"))
}

// OpenSQLiteAt opens a store on path (e.g. to reopen a file), closed at cleanup.
func OpenSQLiteAt(t testing.TB, path string) *sqlitestore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatalf("open sqlite store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close sqlite store: %v", err)
		}
	})
	return s
}

var (
	reachOnce sync.Once
	reachErr  error
)

// PostgresDSN returns the test server's DSN, failing t if the server does not answer.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDatabaseURL)
	if dsn == "" {
		dsn = DefaultDatabaseURL
	}
	reachOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			reachErr = err
			return
		}
		defer conn.Close(ctx)
		reachErr = conn.Ping(ctx)
	})
	if reachErr != nil {
		t.Fatalf("PostgreSQL is not reachable (set %s to a reachable server's URL, or run ./scripts/test, which starts PostgreSQL on 127.0.0.1:5432 with a database \"test\"): %v",
			EnvDatabaseURL, reachErr)
	}
	return dsn
}

// NewPostgresSchema creates a schema with a random name and drops it (CASCADE) at
// cleanup. Several stores (separate pools, as separate Caddy instances would have) may be
// opened on the returned Config; close them before cleanup runs (t.Cleanup order does
// this for stores opened after this call).
func NewPostgresSchema(t testing.TB) pgstore.Config {
	t.Helper()
	cfg := NewPostgresSchemaName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, cfg.DSN)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{cfg.Schema}.Sanitize()); err != nil {
		t.Fatalf("create schema %s: %v", cfg.Schema, err)
	}
	return cfg
}

// NewPostgresSchemaName returns a Config naming a random schema that does not exist yet
// (Open will create it), dropped at cleanup if it exists by then.
func NewPostgresSchemaName(t testing.TB) pgstore.Config {
	t.Helper()
	dsn := PostgresDSN(t)
	schema := randomSchemaName(t)
	t.Cleanup(func() {
		if err := dropSchema(dsn, schema); err != nil {
			t.Error(err)
		}
	})
	return pgstore.Config{DSN: dsn, Schema: schema}
}

// randomSchemaName returns a schema name no other test (of this run or of a parallel
// one on the same server) will pick.
func randomSchemaName(t testing.TB) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random schema name: %v", err)
	}
	return "form_outbox_test_" + hex.EncodeToString(b[:])
}

// dropSchema drops schema and everything in it, if it exists.
func dropSchema(dsn, schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("drop schema %s: connect: %w", schema, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}

// OpenPostgresAt opens a store on cfg, closed at cleanup.
func OpenPostgresAt(t testing.TB, cfg pgstore.Config) *pgstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open postgres store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close postgres store: %v", err)
		}
	})
	return s
}

// OpenPostgres opens a store on a fresh schema of its own.
func OpenPostgres(t testing.TB) outbox.Store {
	t.Helper()
	return OpenPostgresAt(t, NewPostgresSchema(t))
}

// Stores lists every implementation by name, for tests that must pass on each.
func Stores() map[string]func(testing.TB) outbox.Store {
	return map[string]func(testing.TB) outbox.Store{
		"sqlite":   OpenSQLite,
		"postgres": OpenPostgres,
	}
}
