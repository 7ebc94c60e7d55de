package sqlitestore

import (
	"context"
	"fmt"
)

// scrubWAL runs after an erasure (DeleteSubmission, Prune) has committed. secure_delete
// zeroes the erased rows in the pages the transaction wrote, but in WAL mode those pages
// go to the WAL, and older frames of the WAL still hold the rows as they were, as does the
// main file until a checkpoint copies the zeroed pages over them. A TRUNCATE checkpoint
// does both: it writes every frame back into the main file and empties the WAL. It waits
// (up to the busy timeout) for readers still using older frames; if one outlasts that,
// the erased bytes stay in the WAL until the next checkpoint, and the caller hears so.
func (s *Store) scrubWAL(ctx context.Context) error {
	var busy, walFrames, moved int
	if err := s.w.QueryRowContext(ctx, qCheckpointWAL).Scan(&busy, &walFrames, &moved); err != nil {
		return fmt.Errorf("checkpoint the WAL: %w", err)
	}
	if busy != 0 {
		return fmt.Errorf("checkpoint the WAL: a reader kept it busy; erased data stays in %s-wal until the next checkpoint", s.path)
	}
	return nil
}
