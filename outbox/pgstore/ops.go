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
	sql, args := pageQuery(qDeliveriesByStatus, qDeliveriesByStatusOrder, p)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, "", fmt.Errorf("list deliveries: %w", err)
	}
	out, next := outbox.TrimPage(out, p.Limit, outbox.DeliveryCursor)
	return out, next, nil
}

// pageQuery is head, p's conditions (their fragments, storeflow.PageFragments) and
// order, with p.Fetch as the LIMIT.
func pageQuery(head, order string, p storeflow.Page) (string, []any) {
	var q query
	for _, c := range p.Conds {
		q.where(pageFragments[c.Name], c.Args...)
	}
	return q.build(head, order, p.Fetch)
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
	err := s.pool.QueryRow(ctx, qStats, now).
		Scan(&waiting, &sending, &st.Due, &oldest, &st.Dead)
	if err != nil {
		return st, fmt.Errorf("outbox stats: %w", err)
	}
	st.Backlog = waiting + sending
	st.OldestDueAt = utcOrZero(oldest)
	return st, nil
}

// Prune deletes one batch of expired submissions whose deliveries are all terminal
// (cascading to deliveries and attempts), then one batch of old events
// (storeflow.Prune). Rows a worker has locked are skipped rather than waited for.
func (s *Store) Prune(ctx context.Context, before time.Time, batch int) (outbox.PruneResult, error) {
	return storeflow.Prune(ctx, flow{s}, before, batch)
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
	if err := conn.QueryRow(ctx, qTryPrunerLock, key).Scan(&ok); err != nil {
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
		if _, err := conn.Exec(ctx, qPrunerUnlock, key); err != nil {
			// A session whose unlock failed may still hold the lock: close it so the
			// lock goes with it instead of returning it to the pool.
			conn.Conn().Close(ctx)
		}
		conn.Release()
	}
	return unlock, true, nil
}
