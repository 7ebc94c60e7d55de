package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// ListSubmissions pages through submissions newest first with a keyset cursor, so a deep
// page costs what the first one does (SearchSubmissions, inbox.go, runs the query).
func (s *Store) ListSubmissions(ctx context.Context, f outbox.SubmissionFilter) ([]outbox.Submission, string, error) {
	return s.SearchSubmissions(ctx, f.InboxFilter())
}

// ListDeliveriesByStatus pages through deliveries of one status (or all), latest
// next_attempt_at first.
func (s *Store) ListDeliveriesByStatus(ctx context.Context, f outbox.DeliveryFilter) ([]outbox.Delivery, string, error) {
	p, err := storeflow.DeliveriesPage(f)
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	q, args := pageQuery(qDeliveriesByStatus, qDeliveriesByStatusOrder, p)
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
	out, next := outbox.TrimPage(out, p.Limit, outbox.DeliveryCursor)
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
	err := s.r.QueryRowContext(ctx, qStats, micros(now)).
		Scan(&waiting, &sending, &st.Due, &oldest, &st.Dead)
	if err != nil {
		return st, fmt.Errorf("outbox stats: %w", err)
	}
	st.Backlog = waiting + sending
	st.OldestDueAt = fromNullMicros(oldest)
	return st, nil
}

// Prune deletes one batch of expired submissions whose deliveries are all terminal
// (cascading to deliveries and attempts), then one batch of old events
// (storeflow.Prune), and then scrubs the erased bytes from the files.
func (s *Store) Prune(ctx context.Context, before time.Time, batch int) (outbox.PruneResult, error) {
	res, err := storeflow.Prune(ctx, pruneFlow{flow{s}}, before, batch)
	if err != nil {
		return res, err
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
