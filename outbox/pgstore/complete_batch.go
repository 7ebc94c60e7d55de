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

// CompleteBatch records many completions in one transaction, pipelined in one round trip,
// each fenced by its own lease token: a stale lease gets outbox.ErrLeaseLost and writes
// nothing, the others are recorded. A completion failing with a data or constraint error
// is set aside with its own error and the rest rerun. See outbox.BatchCompleter.
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

	// One set-based statement when it can tell the completions apart by delivery id; the
	// pipeline below when it cannot, or when the statement failed (it then also finds a
	// completion whose own row is bad, or fails the batch as a whole).
	if len(live) > 1 && distinctDeliveries(cs, live) && s.completeSet(ctx, cs, live, errs) {
		return errs
	}
	isolate(live, func(live []int) (int, error) { return s.completeRun(ctx, cs, live, errs) },
		func(i int, err error) { errs[i] = fmt.Errorf("complete delivery %s: %w", cs[i].DeliveryID, err) },
		func(i int, err error) {
			errs[i] = fmt.Errorf("complete delivery %s: %w: %w", cs[i].DeliveryID, outbox.ErrBatchMemberFailed, err)
		})
	return errs
}

// completeRun runs one transaction over the live completions (see isolate).
func (s *Store) completeRun(ctx context.Context, cs []outbox.Completion, live []int, errs []error) (int, error) {
	bad := -1
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		bad, err = pipeline(ctx, tx, completeOneSQL, live, func(i int) []any { return completeArgs(cs[i]) }, func(i int, row pgx.Row) error {
			var subID [16]byte
			switch err := row.Scan(&subID); {
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

// completeArgs are completeOneSQL's parameters for a completion completion.Plan has
// checked and filled, in completeColumns' order.
func completeArgs(c outbox.Completion) []any {
	a, e := c.Attempt, eventOf(c)
	return []any{
		string(c.Status), c.NextAttemptAt, c.LastError, c.Provider, c.ProviderMessageID, c.Now, [16]byte(c.DeliveryID), c.LeaseToken,
		a.Attempt, a.Provider, a.StartedAt, a.FinishedAt, string(a.Outcome),
		a.HTTPStatus, a.ErrorCode, a.Error, a.ProviderMessageID,
		e.kind, e.sub, e.delivery, e.data, e.at,
	}
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
