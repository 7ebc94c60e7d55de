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
		for _, m := range ms {
			if applied[m.Version] {
				continue
			}
			if err := tx.execScript(m.SQL); err != nil {
				return fmt.Errorf("apply %s: %w", m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, qRecordMigration, m.Version, micros(time.Now())); err != nil {
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
