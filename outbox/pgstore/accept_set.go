package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// acceptSet writes the live items (each submission id once) with acceptSetSQL and looks
// up what the skipped ones duplicated. It reports false when the statement failed: then
// nothing was written and out is untouched, and the caller runs the statement per item
// (acceptEach), which also sets aside an item whose own row is bad.
//
// Without a before-commit hook the statement runs as its own transaction (no BEGIN and
// COMMIT round trips), and duplicates are looked up after it committed: what they
// collided with was committed too, by then. If only that lookup fails, the duplicates get
// the error (their insert wrote nothing, so a retry is safe) and the rest their ids.
func (s *Store) acceptSet(ctx context.Context, rows []acceptRow, live []int, out []outbox.AcceptOutcome) bool {
	cols := newAcceptColumns(rows, live).params()
	res := make([]outbox.AcceptOutcome, len(rows))
	var dups []int
	insert := func(q pgx.Tx) error {
		var (
			qr  pgx.Rows
			err error
		)
		if q != nil {
			qr, err = q.Query(ctx, acceptSetSQL, cols...)
		} else {
			qr, err = s.pool.Query(ctx, acceptSetSQL, cols...)
		}
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(qr, pgx.RowTo[[16]byte])
		if err != nil {
			return err
		}
		inserted := make(map[[16]byte]bool, len(ids))
		for _, id := range ids {
			inserted[id] = true
		}
		dups = dups[:0]
		for _, i := range live {
			sub := rows[i].sub
			if inserted[sub.ID] {
				res[i] = outbox.AcceptOutcome{Result: outbox.AcceptResult{ID: sub.ID, Status: sub.Status}}
			} else {
				dups = append(dups, i)
			}
		}
		return nil
	}
	if outbox.HasBeforeCommit(ctx) {
		err := s.tx(ctx, func(tx pgx.Tx) error {
			if err := insert(tx); err != nil {
				return err
			}
			if err := s.lookUpDuplicates(ctx, tx, rows, dups, res); err != nil {
				return err
			}
			return outbox.BeforeCommit(ctx)
		})
		if err != nil {
			return false
		}
	} else {
		if err := insert(nil); err != nil {
			return false
		}
		if err := s.lookUpDuplicates(ctx, s.pool, rows, dups, res); err != nil {
			for _, i := range dups {
				res[i] = outbox.AcceptOutcome{Err: fmt.Errorf("accept submission %s: %w", rows[i].sub.ID, err)}
			}
		}
	}
	for _, i := range live {
		out[i] = res[i]
	}
	return true
}

// distinctSubmissions reports whether the live items name each submission id once: the
// set statement joins children to their submission by id.
func distinctSubmissions(items []outbox.AcceptItem, live []int) bool {
	seen := make(map[uuid.UUID]bool, len(live))
	for _, i := range live {
		id := items[i].Submission.ID
		if seen[id] {
			return false
		}
		seen[id] = true
	}
	return true
}

// acceptColumns are acceptSetSQL's arrays: the live items' submissions one row per item,
// their deliveries and extra events flattened, each with its submission's id (dSub, eSub).
type acceptColumns struct {
	id                                                [][16]byte
	form, status, reason, data, meta, key, hash, recv []string // recv: submission.received data
	unbound                                           []string // key: the bound keys
	test                                              []bool
	created                                           []time.Time
	dSub                                              [][16]byte
	d                                                 plannedDeliveries
	eSub                                              [][16]byte
	e                                                 extraEvents
}

func newAcceptColumns(rows []acceptRow, live []int) *acceptColumns {
	n, nd, ne := len(live), 0, 0
	for _, i := range live {
		nd, ne = nd+len(rows[i].deliveries), ne+len(rows[i].sub.Events)
	}
	c := &acceptColumns{
		id: make([][16]byte, 0, n), test: make([]bool, 0, n), created: make([]time.Time, 0, n),
		dSub: make([][16]byte, 0, nd), eSub: make([][16]byte, 0, ne),
	}
	for _, s := range []*[]string{&c.form, &c.status, &c.reason, &c.data, &c.meta, &c.key, &c.hash, &c.recv, &c.unbound} {
		*s = make([]string, 0, n)
	}
	c.d.grow(nd)
	c.e.grow(ne)
	for _, i := range live {
		c.add(&rows[i])
	}
	return c
}

func (c *acceptColumns) add(r *acceptRow) {
	sub := r.sub
	c.id, c.form, c.status, c.reason = append(c.id, r.id), append(c.form, sub.Form), append(c.status, string(sub.Status)), append(c.reason, sub.Reason)
	c.data, c.meta, c.key, c.hash = append(c.data, r.data), append(c.meta, r.meta), append(c.key, r.boundKey), append(c.hash, sub.ContentHash)
	c.unbound = append(c.unbound, r.unbound)
	c.test, c.created, c.recv = append(c.test, sub.Test), append(c.created, r.created), append(c.recv, r.event)
	for k := range r.deliveries {
		c.dSub = append(c.dSub, r.id)
		c.d.add(&r.deliveries[k])
	}
	for _, ev := range sub.Events {
		c.eSub = append(c.eSub, r.id)
		c.e.add(ev, r.created)
	}
}

func (c *acceptColumns) params() []any {
	args := make([]any, 0, 39)
	args = append(args, c.id, c.form, c.status, c.reason, c.data, c.meta, c.key, c.hash, c.test, c.created, c.dSub)
	args = c.d.params(args)
	return append(args, outbox.EventSubmissionReceived, c.recv, c.eSub, c.e.kind, c.e.data, c.e.at, c.unbound, c.e.delivery)
}
