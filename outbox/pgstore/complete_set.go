package pgstore

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// completeSetSQL is completeOneSQL over arrays: one statement records a whole batch, so the
// server plans and runs it once instead of once per completion, which is most of its
// cost when sends finish by the hundred (a burn-down). The fencing is the same, per row:
// a completion whose lease is gone matches no row in u, so neither its attempt nor its
// event is written, and its id is missing from the result.
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
	SELECT c.kind, COALESCE(c.esub, u.submission_id), COALESCE(c.edeliv, u.id), c.data::json, c.at
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
	done := make(map[uuid.UUID]bool, len(live))
	run := func(q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}) error {
		rows, err := q.Query(ctx, completeSetSQL, cols.args()...)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
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

// completeColumns holds completeArgs transposed: one array per parameter.
type completeColumns struct {
	status, lastError, provider, pmid, token, aprov, outcome, code, errText, apmid, kind, data []string
	next, now, started, finished, at                                                           []time.Time
	id                                                                                         []uuid.UUID
	esub, edeliv                                                                               []*uuid.UUID
	att, http                                                                                  []int32
}

func newCompleteColumns(n int) *completeColumns {
	return &completeColumns{
		status: make([]string, 0, n), next: make([]time.Time, 0, n), lastError: make([]string, 0, n),
		provider: make([]string, 0, n), pmid: make([]string, 0, n), now: make([]time.Time, 0, n),
		id: make([]uuid.UUID, 0, n), token: make([]string, 0, n), att: make([]int32, 0, n),
		aprov: make([]string, 0, n), started: make([]time.Time, 0, n), finished: make([]time.Time, 0, n),
		outcome: make([]string, 0, n), http: make([]int32, 0, n), code: make([]string, 0, n),
		errText: make([]string, 0, n), apmid: make([]string, 0, n), kind: make([]string, 0, n),
		esub: make([]*uuid.UUID, 0, n), edeliv: make([]*uuid.UUID, 0, n), data: make([]string, 0, n),
		at: make([]time.Time, 0, n),
	}
}

// add appends c's values, taken from completeArgs so that both paths write the same.
func (k *completeColumns) add(c outbox.Completion) {
	a := completeArgs(c)
	k.status = append(k.status, a[0].(string))
	k.next = append(k.next, a[1].(time.Time))
	k.lastError = append(k.lastError, a[2].(string))
	k.provider = append(k.provider, a[3].(string))
	k.pmid = append(k.pmid, a[4].(string))
	k.now = append(k.now, a[5].(time.Time))
	k.id = append(k.id, a[6].(uuid.UUID))
	k.token = append(k.token, a[7].(string))
	k.att = append(k.att, int32(a[8].(int)))
	k.aprov = append(k.aprov, a[9].(string))
	k.started = append(k.started, a[10].(time.Time))
	k.finished = append(k.finished, a[11].(time.Time))
	k.outcome = append(k.outcome, a[12].(string))
	k.http = append(k.http, int32(a[13].(int)))
	k.code = append(k.code, a[14].(string))
	k.errText = append(k.errText, a[15].(string))
	k.apmid = append(k.apmid, a[16].(string))
	k.kind = append(k.kind, a[17].(string))
	k.esub = append(k.esub, optionalUUID(a[18]))
	k.edeliv = append(k.edeliv, optionalUUID(a[19]))
	k.data = append(k.data, a[20].(string))
	k.at = append(k.at, a[21].(time.Time))
}

func (k *completeColumns) args() []any {
	return []any{k.status, k.next, k.lastError, k.provider, k.pmid, k.now, k.id, k.token, k.att, k.aprov,
		k.started, k.finished, k.outcome, k.http, k.code, k.errText, k.apmid, k.kind, k.esub, k.edeliv,
		k.data, k.at}
}

func optionalUUID(v any) *uuid.UUID {
	if id, ok := v.(uuid.UUID); ok {
		return &id
	}
	return nil
}
