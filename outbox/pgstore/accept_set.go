package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// acceptSetSQL is acceptOneSQL over a whole batch: one statement inserts every submission
// (array order, so keyed ones keep sortKeyed's order), then the deliveries and events of
// those it inserted. The server plans and runs one statement per group commit instead of
// one per submission. ON CONFLICT DO NOTHING skips a duplicate, of a stored row or of an
// earlier item of the same batch, and a skipped submission's id is missing from s, so
// none of its deliveries or events are written.
const acceptSetSQL = `
WITH s AS (
	INSERT INTO submissions (` + submissionColumns + `)
	SELECT x.id, x.form, x.status, x.reason, x.data::json, x.meta::json, x.key, x.hash, x.test, x.created
	FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::text[], $9::bool[], $10::timestamptz[])
		AS x(id, form, status, reason, data, meta, key, hash, test, created)
	ON CONFLICT DO NOTHING
	RETURNING id
), d AS (
	INSERT INTO deliveries (` + deliveryColumns + `)
	SELECT ` + plannedDeliveryValues + `
	FROM unnest($11::uuid[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::int[],
		$18::int[], $19::timestamptz[], $20::text[], $21::text[], $22::timestamptz[], $23::text[],
		$24::text[], $25::text[], $26::text[], $27::timestamptz[], $28::timestamptz[],
		$29::timestamptz[])
		AS d(sub, id, ` + plannedDeliveryFields + `)
	JOIN s ON s.id = d.sub
), e AS (
	INSERT INTO events (kind, submission_id, data, at)
	SELECT $30, s.id, x.data::json, x.at
	FROM unnest($1::uuid[], $31::text[], $10::timestamptz[]) AS x(id, data, at) JOIN s ON s.id = x.id
	UNION ALL
	SELECT x.kind, s.id, x.data::json, x.at
	FROM unnest($32::uuid[], $33::text[], $34::text[], $35::timestamptz[]) AS x(sub, kind, data, at)
	JOIN s ON s.id = x.sub
)
SELECT id FROM s`

// acceptSet writes the live items (each submission id once) with acceptSetSQL and looks
// up what the skipped ones duplicated. It reports false when the statement failed: then
// nothing was written and out is untouched, and the caller falls back to the
// per-statement pipeline, which also sets aside an item whose own row is bad.
//
// Without a before-commit hook the statement runs as its own transaction (no BEGIN and
// COMMIT round trips), and duplicates are looked up after it committed: what they
// collided with was committed too, by then. If only that lookup fails, the duplicates get
// the error (their insert wrote nothing, so a retry is safe) and the rest their ids.
func (s *Store) acceptSet(ctx context.Context, items []outbox.AcceptItem, args [][]any, live []int, out []outbox.AcceptOutcome) bool {
	cols := acceptColumns(args, live)
	res := make([]outbox.AcceptOutcome, len(items))
	var dups []int
	insert := func(q pgx.Tx) error {
		var rows pgx.Rows
		var err error
		if q != nil {
			rows, err = q.Query(ctx, acceptSetSQL, cols...)
		} else {
			rows, err = s.pool.Query(ctx, acceptSetSQL, cols...)
		}
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return err
		}
		inserted := make(map[uuid.UUID]bool, len(ids))
		for _, id := range ids {
			inserted[id] = true
		}
		dups = dups[:0]
		for _, i := range live {
			sub := items[i].Submission
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
			if err := s.lookUpDuplicates(ctx, tx, items, args, dups, res); err != nil {
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
		if err := s.lookUpDuplicates(ctx, s.pool, items, args, dups, res); err != nil {
			for _, i := range dups {
				res[i] = outbox.AcceptOutcome{Err: fmt.Errorf("accept submission %s: %w", items[i].Submission.ID, err)}
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

// acceptColumns transposes acceptArgs of the live items into acceptSetSQL's arrays:
// submissions one row per item, deliveries and extra events flattened with their
// submission's id.
func acceptColumns(args [][]any, live []int) []any {
	n := len(live)
	var (
		ids                                              = make([]uuid.UUID, 0, n)
		forms, statuses, reasons, datas, metas, hashes   = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		keys                                             = make([]*string, 0, n)
		tests                                            = make([]bool, 0, n)
		created                                          = make([]time.Time, 0, n)
		received                                         = make([]string, 0, n)
		dSub                                             []uuid.UUID
		dID, dRoute, dChan, dRcpt, dStatus               []string
		dAtt, dMax                                       []int32
		dNext, dCreated, dUpdated                        []time.Time
		dOwner, dToken, dLastErr, dProv, dPmid, dPayload []string
		dLocked, dSent                                   []pgtype.Timestamptz
		eSub                                             []uuid.UUID
		eKind, eData                                     []string
		eAt                                              []time.Time
	)
	for _, i := range live {
		a := args[i]
		id := a[0].(uuid.UUID)
		ids = append(ids, id)
		forms, statuses, reasons = append(forms, a[1].(string)), append(statuses, a[2].(string)), append(reasons, a[3].(string))
		datas, metas = append(datas, a[4].(string)), append(metas, a[5].(string))
		keys, hashes = append(keys, a[6].(*string)), append(hashes, a[7].(string))
		tests, created = append(tests, a[8].(bool)), append(created, a[9].(time.Time))
		received = append(received, a[29].(string))
		for k := range a[10].([]string) {
			dSub = append(dSub, id)
			dID = append(dID, a[10].([]string)[k])
			dRoute = append(dRoute, a[11].([]string)[k])
			dChan = append(dChan, a[12].([]string)[k])
			dRcpt = append(dRcpt, a[13].([]string)[k])
			dStatus = append(dStatus, a[14].([]string)[k])
			dAtt = append(dAtt, a[15].([]int32)[k])
			dMax = append(dMax, a[16].([]int32)[k])
			dNext = append(dNext, a[17].([]time.Time)[k])
			dOwner = append(dOwner, a[18].([]string)[k])
			dToken = append(dToken, a[19].([]string)[k])
			dLocked = append(dLocked, a[20].([]pgtype.Timestamptz)[k])
			dLastErr = append(dLastErr, a[21].([]string)[k])
			dProv = append(dProv, a[22].([]string)[k])
			dPmid = append(dPmid, a[23].([]string)[k])
			dPayload = append(dPayload, a[24].([]string)[k])
			dCreated = append(dCreated, a[25].([]time.Time)[k])
			dUpdated = append(dUpdated, a[26].([]time.Time)[k])
			dSent = append(dSent, a[27].([]pgtype.Timestamptz)[k])
		}
		for k := range a[30].([]string) {
			eSub = append(eSub, id)
			eKind = append(eKind, a[30].([]string)[k])
			eData = append(eData, a[31].([]string)[k])
			eAt = append(eAt, a[32].([]time.Time)[k])
		}
	}
	return []any{
		ids, forms, statuses, reasons, datas, metas, keys, hashes, tests, created,
		dSub, dID, dRoute, dChan, dRcpt, dStatus, dAtt, dMax, dNext, dOwner, dToken, dLocked, dLastErr,
		dProv, dPmid, dPayload, dCreated, dUpdated, dSent,
		outbox.EventSubmissionReceived, received,
		eSub, eKind, eData, eAt,
	}
}
