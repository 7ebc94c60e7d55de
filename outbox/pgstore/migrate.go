package pgstore

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationList returns the embedded migrations in version order.
func migrationList() ([]migrations.Migration, error) {
	return migrations.Load(migrationFiles, "migrations")
}

// lockKey is the advisory lock that serializes migrations of one schema; other schemas
// (other tests, other tenants) migrate in parallel.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("form_outbox.migrate:" + schema))
	return int64(h.Sum64())
}

// migrate creates the schema if needed and applies every migration not yet recorded, all
// in one transaction holding a transaction-scoped advisory lock: a concurrent Open waits,
// then finds everything recorded, and a failed migration leaves nothing half applied.
func (s *Store) migrate(ctx context.Context) error { return s.migrateOn(ctx, s.pool) }

// migrateOn migrates through db: the pool, or (lazy stores) the first connection made.
func (s *Store) migrateOn(ctx context.Context, db beginner) error {
	ms, err := migrationList()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	err = txOn(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qMigrationLock, lockKey(s.schema)); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		if s.schema != "" {
			// Look before creating: CREATE SCHEMA IF NOT EXISTS still demands the CREATE
			// privilege on the database, which a role given an existing schema may lack.
			var exists bool
			if err := tx.QueryRow(ctx, qSchemaExists, s.schema).Scan(&exists); err != nil {
				return fmt.Errorf("look up schema: %w", err)
			}
			if !exists {
				if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{s.schema}.Sanitize()); err != nil {
					return fmt.Errorf("create schema: %w", err)
				}
			}
		}
		if _, err := tx.Exec(ctx, qCreateMigrationsTable); err != nil {
			return fmt.Errorf("create migrations table: %w", err)
		}
		rows, err := tx.Query(ctx, qAppliedMigrations)
		if err != nil {
			return err
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return fmt.Errorf("read applied migrations: %w", err)
		}
		done := map[int]bool{}
		for _, v := range applied {
			done[v] = true
		}
		for _, m := range ms {
			if done[m.Version] {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("apply %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, qRecordMigration, m.Version); err != nil {
				return fmt.Errorf("record %s: %w", m.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
