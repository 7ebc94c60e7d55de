package sqlitestore

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationList returns the embedded migrations in version order.
func migrationList() ([]migrations.Migration, error) {
	return migrations.Load(migrationFiles, "migrations")
}

// migrate applies every migration not yet recorded, in one IMMEDIATE transaction: the
// write lock is the migration lock, so a second process opening the same file waits and
// then finds the work done.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrationList()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	err = s.writeTx(ctx, func(tx *txStmts) error {
		if _, err := tx.ExecContext(ctx, qCreateMigrationsTable); err != nil {
			return err
		}
		applied := map[int]bool{}
		rows, err := tx.QueryContext(ctx, qAppliedMigrations)
		if err != nil {
			return err
		}
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return err
			}
			applied[v] = true
		}
		if err := rows.Close(); err != nil {
			return err
		}
		bumped := false
		for _, m := range ms {
			if applied[m.Version] {
				continue
			}
			bumped = true
			if err := tx.execScript(m.SQL); err != nil {
				return fmt.Errorf("apply %s: %w", m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, qRecordMigration, m.Version, micros(time.Now())); err != nil {
				return fmt.Errorf("record %s: %w", m.Name, err)
			}
		}
		if bumped {
			return bumpSchemaVersion(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// bumpSchemaVersion raises the schema cookie after migrations ran. A migration that
// edits sqlite_schema directly (0008 widens a CHECK) does not change it, and a
// connection of another process that parsed the schema before would keep the old
// constraint; a new cookie makes every connection read the schema again.
func bumpSchemaVersion(ctx context.Context, tx *txStmts) error {
	var v int64
	if err := tx.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema_version: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA schema_version = %d", v+1)); err != nil {
		return fmt.Errorf("bump schema_version: %w", err)
	}
	return nil
}
