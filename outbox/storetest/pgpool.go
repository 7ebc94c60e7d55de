package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
)

// PostgresPool lends each test of a parallel suite a migrated schema of its own and
// reuses schemas from one test to the next, so a run of the suite creates and migrates
// only as many schemas as tests ran at once, not one per test.
//
// A schema is emptied when its test ends, not wrapped in a transaction that is rolled
// back: the store under test owns its connection pool and commits, and several cases
// depend on that (a second connection must see a commit, a stale lease holder writes
// through another connection, the group committer's batches commit on their own). A
// rollback would test none of that. Emptying is a TRUNCATE of every table but the
// migration record, with RESTART IDENTITY, so the next test starts exactly as on a
// freshly migrated schema (event ids from 1 again) while Open finds its migrations
// applied and only checks them.
type PostgresPool struct {
	dsn string

	mu      sync.Mutex
	free    []pgstore.Config
	created []string
}

// NewPostgresPool returns a pool whose schemas are all dropped when t and its subtests
// (parallel ones included) have finished.
func NewPostgresPool(t *testing.T) *PostgresPool {
	t.Helper()
	p := &PostgresPool{dsn: PostgresDSN(t)}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, schema := range p.created {
			if err := dropSchema(p.dsn, schema); err != nil {
				t.Error(err)
			}
		}
	})
	return p
}

// Open opens a store on a schema no other running test holds, empty and migrated. The
// schema goes back to the pool, emptied, after the store is closed at t's cleanup.
func (p *PostgresPool) Open(t testing.TB) outbox.Store {
	t.Helper()
	cfg := p.take(t)
	// Registered before OpenPostgresAt registers the store's Close, so it runs after it:
	// the schema is emptied only once nothing of the test is connected to it.
	t.Cleanup(func() { p.give(t, cfg) })
	return OpenPostgresAt(t, cfg)
}

// take returns a free schema, or names a new one (Open creates and migrates it).
func (p *PostgresPool) take(t testing.TB) pgstore.Config {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		cfg := p.free[n-1]
		p.free = p.free[:n-1]
		return cfg
	}
	schema := randomSchemaName(t)
	p.created = append(p.created, schema)
	return pgstore.Config{DSN: p.dsn, Schema: schema}
}

// give empties cfg's schema and puts it back. A schema that cannot be emptied is not
// lent again (the pool's cleanup still drops it), so no test ever sees another's rows.
func (p *PostgresPool) give(t testing.TB, cfg pgstore.Config) {
	if err := truncateSchema(p.dsn, cfg.Schema); err != nil {
		t.Errorf("empty schema %s for reuse: %v", cfg.Schema, err)
		return
	}
	p.mu.Lock()
	p.free = append(p.free, cfg)
	p.mu.Unlock()
}

// truncateSchema empties every table of schema except form_outbox_migrations. A schema
// that Open never created (its test failed first) has no tables and is left as it is.
func truncateSchema(dsn, schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables
		WHERE schemaname = $1 AND tablename <> 'form_outbox_migrations' ORDER BY tablename`, schema)
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var name string
		err := r.Scan(&name)
		return pgx.Identifier{schema, name}.Sanitize(), err
	})
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	if len(tables) == 0 {
		return nil
	}
	if _, err := conn.Exec(ctx, `TRUNCATE `+strings.Join(tables, ", ")+` RESTART IDENTITY`); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	return nil
}
