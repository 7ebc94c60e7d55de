package pgstore

import (
	"context"
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// MigrationLevel implements outbox.MigrationReporter.
func (s *Store) MigrationLevel(ctx context.Context) (outbox.MigrationLevel, error) {
	var lv outbox.MigrationLevel
	ms, err := migrationList()
	if err != nil {
		return lv, fmt.Errorf("migration level: %w", err)
	}
	if len(ms) > 0 {
		lv.Known = ms[len(ms)-1].Version
	}
	if err := s.pool.QueryRow(ctx, qMigrationLevel).Scan(&lv.Applied); err != nil {
		return lv, fmt.Errorf("migration level: %w", err)
	}
	return lv, nil
}
