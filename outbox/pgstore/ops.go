package pgstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
	var q query
	if f.Status != "" {
		q.where("status = $?", string(f.Status))
	}
	if !cur.IsZero() {
		q.where("(next_attempt_at, id) < ($?, $?)", cur.At, cur.ID)
	}
	sql, args := q.build(`SELECT `+deliveryColumns+` FROM deliveries`, `ORDER BY next_attempt_at DESC, id DESC`, limit+1)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	out, next := outbox.TrimPage(out, limit, outbox.DeliveryCursor)
	return out, next, nil
}

// query assembles a filtered SELECT; each "$?" becomes the next numbered parameter.
type query struct {
	conds []string
	args  []any
}

func (q *query) where(cond string, args ...any) {
	for _, a := range args {
		q.args = append(q.args, a)
		cond = strings.Replace(cond, "$?", fmt.Sprintf("$%d", len(q.args)), 1)
	}
	q.conds = append(q.conds, cond)
}

func (q *query) build(head, order string, limit int) (string, []any) {
	sql := head
	if len(q.conds) > 0 {
		sql += " WHERE " + strings.Join(q.conds, " AND ")
	}
	args := append(q.args, limit)
	return fmt.Sprintf("%s %s LIMIT $%d", sql, order, len(args)), args
}

// ReleaseSubmission accepts a held-back submission and makes its skipped deliveries due
// (Act, inbox.go, holds the one implementation).
func (s *Store) ReleaseSubmission(ctx context.Context, id uuid.UUID, now time.Time) error {
	return s.Act(ctx, outbox.Action{Kind: outbox.ActionRelease, SubmissionID: id, Now: now})
}

// DeleteSubmission erases a submission; deliveries and attempts go by cascade.
func (s *Store) DeleteSubmission(ctx context.Context, id uuid.UUID, now time.Time) error {
	return s.Act(ctx, outbox.Action{Kind: outbox.ActionErase, SubmissionID: id, Now: now})
}

// Stats reads the due and leased partial indexes and the status index.
func (s *Store) Stats(ctx context.Context, now time.Time) (outbox.Stats, error) {
	now = orNow(now)
	var (
		st               outbox.Stats
		waiting, sending int64
		oldest           *time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM deliveries WHERE status IN ('pending', 'failed')),
			(SELECT count(*) FROM deliveries WHERE status = 'sending'),
			(SELECT count(*) FROM deliveries WHERE status IN ('pending', 'failed') AND next_attempt_at <= $1),
			(SELECT min(next_attempt_at) FROM deliveries WHERE status IN ('pending', 'failed') AND next_attempt_at <= $1),
			(SELECT count(*) FROM deliveries WHERE status = 'dead')`, now).
		Scan(&waiting, &sending, &st.Due, &oldest, &st.Dead)
	if err != nil {
		return st, fmt.Errorf("outbox stats: %w", err)
	}
	st.Backlog = waiting + sending
	st.OldestDueAt = utcOrZero(oldest)
	return st, nil
}

// Prune deletes one batch of expired submissions whose deliveries are all terminal
// (cascading to deliveries and attempts), then one batch of old events. Rows a worker has
// locked are skipped rather than waited for. Events are taken oldest id first, so the
// scan stops at the first young one instead of reading them all.
func (s *Store) Prune(ctx context.Context, before time.Time, batch int) (outbox.PruneResult, error) {
	var res outbox.PruneResult
	if batch <= 0 {
		return res, fmt.Errorf("prune: batch must be positive")
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM submissions WHERE id IN (
				SELECT s.id FROM submissions s
				WHERE s.created_at < $1 AND NOT EXISTS (
					SELECT 1 FROM deliveries d
					WHERE d.submission_id = s.id AND d.status NOT IN ('sent', 'dead', 'skipped'))
				ORDER BY s.created_at LIMIT $2
				FOR UPDATE SKIP LOCKED)`, before, batch)
		if err != nil {
			return fmt.Errorf("submissions: %w", err)
		}
		res.Submissions = int(tag.RowsAffected())
		tag, err = tx.Exec(ctx, `DELETE FROM events WHERE id IN (
				SELECT id FROM events ORDER BY id LIMIT $2) AND at < $1`, before, batch)
		if err != nil {
			return fmt.Errorf("events: %w", err)
		}
		res.Events = int(tag.RowsAffected())
		return pruneAutoreplies(ctx, tx, before, batch)
	})
	if err != nil {
		return outbox.PruneResult{}, fmt.Errorf("prune: %w", err)
	}
	return res, nil
}

// pruneLockKey is the advisory lock that makes one instance per schema the pruner.
func pruneLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("form_outbox.prune:" + schema))
	return int64(h.Sum64())
}

// LockPruner takes a session-level advisory lock on a connection of its own, held until
// unlock; if this process dies, PostgreSQL drops the lock with the session.
func (s *Store) LockPruner(ctx context.Context) (func(), bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("lock pruner: %w", err)
	}
	key := pruneLockKey(s.schema)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, fmt.Errorf("lock pruner: %w", err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	unlock := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
			// A session whose unlock failed may still hold the lock: close it so the
			// lock goes with it instead of returning it to the pool.
			conn.Conn().Close(ctx)
		}
		conn.Release()
	}
	return unlock, true, nil
}
