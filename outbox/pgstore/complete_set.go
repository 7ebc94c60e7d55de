package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// completeSetSQL is completeOneSQL over arrays: one statement records a whole batch, so the
// server plans and runs it once instead of once per completion, which is most of its
// cost when sends finish by the hundred (a burn-down). The fencing is the same, per row:
// a completion whose lease is gone matches no row in u, so neither its attempt nor its
// event is written, and its id is missing from the result. The arrays are
// completeColumns'; as in completeOneSQL, an event's submission or delivery that is the
// nil uuid is the delivery's.
const completeSetSQL = `
WITH c AS (
	SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::timestamptz[],
		$7::uuid[], $8::text[], $9::int[], $10::text[], $11::timestamptz[], $12::timestamptz[], $13::text[],
		$14::int[], $15::text[], $16::text[], $17::text[], $18::text[], $19::uuid[], $20::uuid[], $21::text[],
		$22::timestamptz[])
	AS c(status, next, last_error, provider, pmid, now, id, token, att, aprov, started, finished, outcome,
		http, code, err, apmid, kind, esub, edeliv, data, at)
), u AS (
	UPDATE deliveries d SET
		status = c.status,
		next_attempt_at = CASE WHEN c.status = 'failed' THEN c.next ELSE d.next_attempt_at END,
		last_error = c.last_error,
		provider = c.provider,
		provider_message_id = c.pmid,
		lease_owner = '',
		lease_token = '',
		locked_until = NULL,
		updated_at = c.now,
		sent_at = CASE WHEN c.status = 'sent' THEN c.now ELSE d.sent_at END
	FROM c
	WHERE d.id = c.id AND d.status = 'sending' AND d.lease_token = c.token AND d.lease_token <> ''
	RETURNING d.id, d.submission_id, d.attempts
), a AS (
	INSERT INTO delivery_attempts (` + attemptColumns + `)
	SELECT u.id,
		GREATEST(CASE WHEN c.att > 0 THEN c.att ELSE u.attempts END,
			COALESCE((SELECT MAX(x.attempt) FROM delivery_attempts x WHERE x.delivery_id = u.id), 0) + 1),
		c.aprov, c.started, c.finished, c.outcome, c.http, c.code, c.err, c.apmid
	FROM u JOIN c ON c.id = u.id
), e AS (
	INSERT INTO events (kind, submission_id, delivery_id, data, at)
	SELECT c.kind, COALESCE(NULLIF(c.esub, ` + nilUUID + `), u.submission_id),
		COALESCE(NULLIF(c.edeliv, ` + nilUUID + `), u.id), c.data::json, c.at
	FROM u JOIN c ON c.id = u.id WHERE c.kind <> ''
)
SELECT id FROM u`

// completeSet records the live completions (sorted by delivery id, each id once) with
// completeSetSQL in one transaction and reports whether it did; on false nothing was
// written and errs is untouched, and the caller falls back to the per-statement pipeline,
// which also sets aside a completion whose own row is bad.
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

// completeColumns are completeSetSQL's arrays: completeArgs transposed, one array per
// parameter, in types pgx encodes without reflection ([16]byte for a uuid).
type completeColumns struct {
	status, lastError, provider, pmid, token, aprov, outcome, code, errText, apmid, kind, data []string
	next, now, started, finished, at                                                           []time.Time
	id, esub, edeliv                                                                           [][16]byte
	att, http                                                                                  []int32
}

func newCompleteColumns(n int) *completeColumns {
	k := &completeColumns{
		id: make([][16]byte, 0, n), esub: make([][16]byte, 0, n), edeliv: make([][16]byte, 0, n),
		att: make([]int32, 0, n), http: make([]int32, 0, n),
	}
	for _, s := range []*[]string{&k.status, &k.lastError, &k.provider, &k.pmid, &k.token, &k.aprov, &k.outcome,
		&k.code, &k.errText, &k.apmid, &k.kind, &k.data} {
		*s = make([]string, 0, n)
	}
	for _, t := range []*[]time.Time{&k.next, &k.now, &k.started, &k.finished, &k.at} {
		*t = make([]time.Time, 0, n)
	}
	return k
}

// add appends c's values: completeArgs' fields, in its order.
func (k *completeColumns) add(c outbox.Completion) {
	a, e := &c.Attempt, eventOf(c)
	k.status, k.next, k.lastError = append(k.status, string(c.Status)), append(k.next, c.NextAttemptAt), append(k.lastError, c.LastError)
	k.provider, k.pmid, k.now = append(k.provider, c.Provider), append(k.pmid, c.ProviderMessageID), append(k.now, c.Now)
	k.id, k.token = append(k.id, c.DeliveryID), append(k.token, c.LeaseToken)
	k.att, k.aprov, k.started = append(k.att, int32(a.Attempt)), append(k.aprov, a.Provider), append(k.started, a.StartedAt)
	k.finished, k.outcome = append(k.finished, a.FinishedAt), append(k.outcome, string(a.Outcome))
	k.http, k.code, k.errText = append(k.http, int32(a.HTTPStatus)), append(k.code, a.ErrorCode), append(k.errText, a.Error)
	k.apmid = append(k.apmid, a.ProviderMessageID)
	k.kind, k.esub, k.edeliv = append(k.kind, e.kind), append(k.esub, e.sub), append(k.edeliv, e.delivery)
	k.data, k.at = append(k.data, e.data), append(k.at, e.at)
}

func (k *completeColumns) args() []any {
	return []any{k.status, k.next, k.lastError, k.provider, k.pmid, k.now, k.id, k.token, k.att, k.aprov,
		k.started, k.finished, k.outcome, k.http, k.code, k.errText, k.apmid, k.kind, k.esub, k.edeliv,
		k.data, k.at}
}
