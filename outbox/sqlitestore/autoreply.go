package sqlitestore

import (
	"context"
	"fmt"
	"time"
)

// The autoreply window itself is kept by the deliveries triggers of migration 0005
// (docs/design.md, "Autoreplies"); the store only prunes windows that closed.
var (
	qPruneAutoreplies = queries.Must("PruneAutoreplies")
	qEraseAutoreplies = queries.Must("EraseAutoreplies")
)

// pruneAutoreplies deletes one batch of windows that closed before before.
func pruneAutoreplies(ctx context.Context, tx txQuerier, before time.Time, batch int) error {
	if _, err := tx.ExecContext(ctx, qPruneAutoreplies, micros(before), batch); err != nil {
		return fmt.Errorf("autoreplies: %w", err)
	}
	return nil
}
