package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// completeSet records the live completions (sorted by delivery id, each id once) with
// completeSetSQL in one transaction and reports whether it did; on false nothing was
// written and errs is untouched, and the caller runs the statement per completion
// (completeEach), which also sets aside a completion whose own row is bad.
func (s *Store) completeSet(ctx context.Context, cs []outbox.Completion, live []int, errs []error) bool {
	cols := newCompleteColumns(len(live))
	for _, i := range live {
		cols.add(cs[i])
	}
	done := make(map[[16]byte]bool, len(live))
	run := func(q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}) error {
		rows, err := q.Query(ctx, completeSetSQL, cols.args()...)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[[16]byte])
		for _, id := range ids {
			done[id] = true
		}
		return err
	}
	var err error
	if outbox.HasBeforeCommit(ctx) {
		err = s.tx(ctx, func(tx pgx.Tx) error {
			if err := run(tx); err != nil {
				return err
			}
			return outbox.BeforeCommit(ctx)
		})
	} else {
		// One statement is its own transaction: no BEGIN and COMMIT round trips.
		err = run(s.pool)
	}
	if err != nil {
		return false
	}

	for _, i := range live {
		errs[i] = nil
		if !done[cs[i].DeliveryID] {
			errs[i] = leaseLost(cs[i])
		}
	}
	return true
}

// completeColumns are completeSetSQL's arrays, one per parameter, in types pgx encodes
// without reflection ([16]byte for a uuid): a completion checked and filled by
// completion.Plan per element.
type completeColumns struct {
	status, lastError, provider, pmid, token, aprov, outcome, code, errText, apmid, kind, data, body []string
	next, now, started, finished, at                                                                 []time.Time
	id, esub, edeliv                                                                                 [][16]byte
	att, http                                                                                        []int32
}

func newCompleteColumns(n int) *completeColumns {
	k := &completeColumns{
		id: make([][16]byte, 0, n), esub: make([][16]byte, 0, n), edeliv: make([][16]byte, 0, n),
		att: make([]int32, 0, n), http: make([]int32, 0, n),
	}
	for _, s := range []*[]string{&k.status, &k.lastError, &k.provider, &k.pmid, &k.token, &k.aprov, &k.outcome,
		&k.code, &k.errText, &k.apmid, &k.kind, &k.data, &k.body} {
		*s = make([]string, 0, n)
	}
	for _, t := range []*[]time.Time{&k.next, &k.now, &k.started, &k.finished, &k.at} {
		*t = make([]time.Time, 0, n)
	}
	return k
}

// add appends c's values.
func (k *completeColumns) add(c outbox.Completion) {
	a, e := &c.Attempt, eventOf(c)
	k.status, k.next, k.lastError = append(k.status, string(c.Status)), append(k.next, c.NextAttemptAt), append(k.lastError, c.LastError)
	k.provider, k.pmid, k.now = append(k.provider, c.Provider), append(k.pmid, c.ProviderMessageID), append(k.now, c.Now)
	k.id, k.token = append(k.id, c.DeliveryID), append(k.token, c.LeaseToken)
	k.att, k.aprov, k.started = append(k.att, int32(a.Attempt)), append(k.aprov, a.Provider), append(k.started, a.StartedAt)
	k.finished, k.outcome = append(k.finished, a.FinishedAt), append(k.outcome, string(a.Outcome))
	k.http, k.code, k.errText = append(k.http, int32(a.HTTPStatus)), append(k.code, a.ErrorCode), append(k.errText, a.Error)
	k.apmid, k.body = append(k.apmid, a.ProviderMessageID), append(k.body, a.BodySHA256)
	k.kind, k.esub, k.edeliv = append(k.kind, e.kind), append(k.esub, e.sub), append(k.edeliv, e.delivery)
	k.data, k.at = append(k.data, e.data), append(k.at, e.at)
}

func (k *completeColumns) args() []any {
	return []any{k.status, k.next, k.lastError, k.provider, k.pmid, k.now, k.id, k.token, k.att, k.aprov,
		k.started, k.finished, k.outcome, k.http, k.code, k.errText, k.apmid, k.kind, k.esub, k.edeliv,
		k.data, k.at, k.body}
}
