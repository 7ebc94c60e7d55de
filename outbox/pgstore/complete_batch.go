package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/completion"
)

// CompleteBatch records many completions in one transaction, each fenced by its own
// lease token: a stale lease gets outbox.ErrLeaseLost and writes nothing, the others are
// recorded. See outbox.BatchCompleter.
//
// One statement (CompleteSet, queries/complete.sql) records them, encoded once
// (completeColumns): the whole batch at once, or, when it cannot (a delivery appears
// twice: a stale and a fresh lease) or it failed, once per completion, pipelined in one
// transaction (completeEach), which sets aside a completion failing with a data or
// constraint error and reruns the rest. A lone completion is a batch of one
// (outbox.CompleteOne).
func (s *Store) CompleteBatch(ctx context.Context, cs []outbox.Completion) []error {
	errs := make([]error, len(cs))
	var live []int
	planned := make([]outbox.Completion, len(cs))
	for i, c := range cs {
		if planned[i], errs[i] = completion.Plan(c); errs[i] == nil {
			live = append(live, i)
		}
	}
	cs = planned // from here on, the checked and filled completions
	// One row-lock order for every batch: concurrent batches cannot deadlock.
	slices.SortFunc(live, func(x, y int) int { return bytes.Compare(cs[x].DeliveryID[:], cs[y].DeliveryID[:]) })

	if len(live) > 0 && distinctDeliveries(cs, live) && s.completeSet(ctx, cs, live, errs) {
		return errs
	}
	isolate(live, func(live []int) (int, error) { return s.completeEach(ctx, cs, live, errs) },
		func(i int, err error) { errs[i] = fmt.Errorf("complete delivery %s: %w", cs[i].DeliveryID, err) },
		func(i int, err error) {
			errs[i] = fmt.Errorf("complete delivery %s: %w: %w", cs[i].DeliveryID, outbox.ErrBatchMemberFailed, err)
		})
	return errs
}

// completeEach runs CompleteSet once per live completion, pipelined in one transaction
// (see isolate).
func (s *Store) completeEach(ctx context.Context, cs []outbox.Completion, live []int, errs []error) (int, error) {
	bad := -1
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		bad, err = pipeline(ctx, tx, completeSetSQL, live, func(i int) []any {
			cols := newCompleteColumns(1)
			cols.add(cs[i])
			return cols.args()
		}, func(i int, row pgx.Row) error {
			var id [16]byte
			switch err := row.Scan(&id); {
			case err == nil:
				errs[i] = nil
			case isNoRows(err):
				errs[i] = leaseLost(cs[i])
			default:
				return err
			}
			return nil
		})
		if err != nil {
			return err
		}
		return outbox.BeforeCommit(ctx)
	})
	return bad, err
}

func leaseLost(c outbox.Completion) error {
	return fmt.Errorf("complete delivery %s: %w", c.DeliveryID, outbox.ErrLeaseLost)
}

// distinctDeliveries reports whether the live completions, sorted by delivery id, name
// each delivery once (a stale and a fresh lease of one delivery can meet in a batch).
func distinctDeliveries(cs []outbox.Completion, live []int) bool {
	for k := 1; k < len(live); k++ {
		if cs[live[k]].DeliveryID == cs[live[k-1]].DeliveryID {
			return false
		}
	}
	return true
}

// completeEvent is what the completion statements write of a completion's event.
type completeEvent struct {
	kind, data    string // no kind: there is no event
	at            time.Time
	sub, delivery [16]byte // uuid.Nil: the delivery's (NilUUID in queries/columns.sql)
}

func eventOf(c outbox.Completion) completeEvent {
	e := completeEvent{data: "{}", at: c.Now}
	if ev := c.Event; ev != nil {
		e.kind, e.data, e.at, e.sub, e.delivery = ev.Kind, string(ev.Data), ev.At, ev.SubmissionID, ev.DeliveryID
	}
	return e
}
