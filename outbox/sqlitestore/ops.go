package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// ListSubmissions pages through submissions newest first with a keyset cursor, so a deep
// page costs what the first one does (SearchSubmissions, inbox.go, runs the query).
func (s *Store) ListSubmissions(ctx context.Context, f outbox.SubmissionFilter) ([]outbox.Submission, string, error) {
	return s.SearchSubmissions(ctx, f.InboxFilter())
}

// ListDeliveriesByStatus pages through deliveries of one status (or all), latest
// next_attempt_at first.
func (s *Store) ListDeliveriesByStatus(ctx context.Context, f outbox.DeliveryFilter) ([]outbox.Delivery, string, error) {
	cur, err := outbox.ParseCursor(f.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	limit := outbox.PageLimit(f.Limit)
	var (
		where []string
		args  []any
	)
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if !cur.IsZero() {
		where = append(where, "(next_attempt_at < ? OR (next_attempt_at = ? AND id < ?))")
		args = append(args, micros(cur.At), micros(cur.At), cur.ID.String())
	}
	q := `SELECT ` + deliveryColumns + ` FROM deliveries`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY next_attempt_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	var out []outbox.Delivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, "", fmt.Errorf("list deliveries: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	out, next := outbox.TrimPage(out, limit, outbox.DeliveryCursor)
	return out, next, nil
}

// ReleaseSubmission accepts a held-back submission and makes its skipped deliveries due
// (Act, inbox.go, holds the one implementation).
func (s *Store) ReleaseSubmission(ctx context.Context, id uuid.UUID, now time.Time) error {
	return s.Act(ctx, outbox.Action{Kind: outbox.ActionRelease, SubmissionID: id, Now: now})
}

// DeleteSubmission erases a submission; deliveries and attempts go by cascade, and
// scrubWAL then removes the erased bytes from the files.
func (s *Store) DeleteSubmission(ctx context.Context, id uuid.UUID, now time.Time) error {
	return s.Act(ctx, outbox.Action{Kind: outbox.ActionErase, SubmissionID: id, Now: now})
}

// Stats reads the due and leased partial indexes and the status index.
func (s *Store) Stats(ctx context.Context, now time.Time) (outbox.Stats, error) {
	now = orNow(now)
	var (
		st               outbox.Stats
		waiting, sending int64
		oldest           sql.NullInt64
	)
	err := s.r.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM deliveries WHERE status IN ('pending', 'failed')),
			(SELECT COUNT(*) FROM deliveries WHERE status = 'sending'),
			(SELECT COUNT(*) FROM deliveries WHERE status IN ('pending', 'failed') AND next_attempt_at <= ?1),
			(SELECT MIN(next_attempt_at) FROM deliveries WHERE status IN ('pending', 'failed') AND next_attempt_at <= ?1),
			(SELECT COUNT(*) FROM deliveries WHERE status = 'dead')`, micros(now)).
		Scan(&waiting, &sending, &st.Due, &oldest, &st.Dead)
	if err != nil {
		return st, fmt.Errorf("outbox stats: %w", err)
	}
	st.Backlog = waiting + sending
	st.OldestDueAt = fromNullMicros(oldest)
	return st, nil
}

// Prune deletes one batch of expired submissions whose deliveries are all terminal
// (cascading to deliveries and attempts), then one batch of old events. Events are taken
// oldest id first, so the scan stops at the first young one instead of reading them all.
func (s *Store) Prune(ctx context.Context, before time.Time, batch int) (outbox.PruneResult, error) {
	var res outbox.PruneResult
	if batch <= 0 {
		return res, fmt.Errorf("prune: batch must be positive")
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `DELETE FROM submissions WHERE id IN (
				SELECT s.id FROM submissions s
				WHERE s.created_at < ?1 AND NOT EXISTS (
					SELECT 1 FROM deliveries d
					WHERE d.submission_id = s.id AND d.status NOT IN ('sent', 'dead', 'skipped'))
				ORDER BY s.created_at LIMIT ?2)`, micros(before), batch)
		if err != nil {
			return fmt.Errorf("submissions: %w", err)
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		res.Submissions = int(n)
		r, err = tx.ExecContext(ctx, `DELETE FROM events WHERE id IN (
				SELECT id FROM events ORDER BY id LIMIT ?2) AND at < ?1`, micros(before), batch)
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		n, err = r.RowsAffected()
		res.Events = int(n)
		if err != nil {
			return err
		}
		return pruneAutoreplies(ctx, tx, before, batch)
	})
	if err != nil {
		return outbox.PruneResult{}, fmt.Errorf("prune: %w", err)
	}
	if res.Submissions > 0 {
		if err := s.scrubWAL(ctx); err != nil {
			return res, fmt.Errorf("prune: %d submissions deleted, but %w", res.Submissions, err)
		}
	}
	return res, nil
}

// LockPruner guards against two pruners in this process (the old and new App of a
// reload); one process per file is SQLite's rule, so no other process competes.
func (s *Store) LockPruner(context.Context) (func(), bool, error) {
	if !s.pruneMu.TryLock() {
		return nil, false, nil
	}
	return s.pruneMu.Unlock, true, nil
}
