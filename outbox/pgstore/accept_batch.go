package pgstore

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/acceptprep"
)

// acceptOneSQL writes one submission, its deliveries and its event in one statement, so
// that a batch of them can be pipelined in a single round trip. ON CONFLICT DO NOTHING
// makes a duplicate write nothing at all: the deliveries and the events are inserted only
// from the row the first CTE returned. The deliveries and the submission's extra events
// (sub.Events, after submission.received) travel as parallel arrays.
const acceptOneSQL = `
WITH s AS (
	INSERT INTO submissions (` + submissionColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT DO NOTHING
	RETURNING id
), d AS (
	INSERT INTO deliveries (` + deliveryColumns + `)
	SELECT ` + plannedDeliveryValues + `
	FROM s, unnest($11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::int[],
		$17::int[], $18::timestamptz[], $19::text[], $20::text[], $21::timestamptz[], $22::text[],
		$23::text[], $24::text[], $25::text[], $26::timestamptz[], $27::timestamptz[],
		$28::timestamptz[])
		AS d(id, ` + plannedDeliveryFields + `)
), e AS (
	INSERT INTO events (kind, submission_id, data, at)
	SELECT $29, s.id, $30::json, $10 FROM s
	UNION ALL
	SELECT x.kind, s.id, x.data::json, x.at
	FROM s, unnest($31::text[], $32::text[], $33::timestamptz[]) AS x(kind, data, at)
)
SELECT id FROM s`

// plannedDeliveryFields names the unnested delivery arrays of acceptOneSQL and
// acceptSetSQL (after the ids), and plannedDeliveryValues makes deliveries' columns of
// them, given the inserted submission s.
const (
	plannedDeliveryFields = `route, channel, recipient, status, attempts, max_attempts, next_attempt_at,
			lease_owner, lease_token, locked_until, last_error, provider, provider_message_id,
			payload, created_at, updated_at, sent_at`
	plannedDeliveryValues = `d.id::uuid, s.id, d.route, d.channel, d.recipient, d.status, d.attempts, d.max_attempts,
		d.next_attempt_at, d.lease_owner, d.lease_token, d.locked_until, d.last_error, d.provider,
		d.provider_message_id, d.payload::json, d.created_at, d.updated_at, d.sent_at`
)

// duplicateSQL finds what a duplicate collided with, as Accept does. It runs as its own
// statement after the insert so that its snapshot sees a conflicting row that another
// transaction committed while the insert waited for it.
const duplicateSQL = `SELECT id, status FROM submissions
	WHERE (form = $2 AND idempotency_key = $3) OR id = $1
	ORDER BY id = $1 LIMIT 1`

// AcceptBatch accepts every item in one transaction (group commit): one WAL flush for the
// lot, and the items' statements pipelined in one round trip. See outbox.BatchAccepter.
//
// Keyed items are written in (form, key) order (see sortKeyed). An item that
// fails with a data or constraint error is set aside with its own error and the
// transaction is rerun without it; a deadlock or serialization failure reruns the batch
// (a few times); any other failure answers every remaining item with the error.
func (s *Store) AcceptBatch(ctx context.Context, items []outbox.AcceptItem) []outbox.AcceptOutcome {
	out := make([]outbox.AcceptOutcome, len(items))
	args := make([][]any, len(items))
	var live []int
	for i, it := range items {
		a, err := acceptArgs(it.Submission, it.Deliveries)
		if err != nil {
			out[i].Err = err
			continue
		}
		args[i] = a
		live = append(live, i)
	}
	sortKeyed(items, live)

	// One set-based statement for the batch; the pipeline below when a submission id
	// appears twice, or when the statement failed (it then also finds an item whose own
	// row is bad, or fails the batch as a whole).
	if len(live) > 1 && distinctSubmissions(items, live) && s.acceptSet(ctx, items, args, live, out) {
		return out
	}

	isolate(live, func(live []int) (int, error) { return s.acceptRun(ctx, items, args, live, out) },
		func(i int, err error) {
			out[i] = outbox.AcceptOutcome{Err: fmt.Errorf("accept submission %s: %w", items[i].Submission.ID, err)}
		},
		func(i int, err error) {
			out[i] = outbox.AcceptOutcome{Err: fmt.Errorf("accept submission %s: %w: %w", items[i].Submission.ID, outbox.ErrBatchMemberFailed, err)}
		})
	return out
}

// acceptRun runs one transaction over the live items (see isolate).
func (s *Store) acceptRun(ctx context.Context, items []outbox.AcceptItem, args [][]any, live []int, out []outbox.AcceptOutcome) (int, error) {
	bad := -1
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var (
			dups []int
			err  error
		)
		bad, err = pipeline(ctx, tx, acceptOneSQL, live, func(i int) []any { return args[i] }, func(i int, row pgx.Row) error {
			sub := items[i].Submission
			var id uuid.UUID
			err := row.Scan(&id)
			switch {
			case err == nil:
				out[i] = outbox.AcceptOutcome{Result: outbox.AcceptResult{ID: sub.ID, Status: sub.Status}}
			case isNoRows(err):
				dups = append(dups, i)
			default:
				return err
			}
			return nil
		})
		if err != nil {
			return err
		}
		// A failure here is the transaction's, not a row's: bad stays -1.
		if err := s.lookUpDuplicates(ctx, tx, items, args, dups, out); err != nil {
			return err
		}
		return outbox.BeforeCommit(ctx)
	})
	return bad, err
}

// lookUpDuplicates answers each item in dups, whose insert was skipped, with what it
// duplicated.
func (s *Store) lookUpDuplicates(ctx context.Context, tx batchSender, items []outbox.AcceptItem, args [][]any, dups []int, out []outbox.AcceptOutcome) error {
	if len(dups) == 0 {
		return nil
	}
	_, err := pipeline(ctx, tx, duplicateSQL, dups, func(i int) []any {
		sub := items[i].Submission
		return []any{sub.ID, sub.Form, args[i][6]}
	}, func(i int, row pgx.Row) error {
		var (
			res    outbox.AcceptResult
			status string
		)
		if err := row.Scan(&res.ID, &status); err != nil {
			return fmt.Errorf("look up duplicate of %s: %w", items[i].Submission.ID, err)
		}
		res.Status, res.Duplicate = outbox.SubmissionStatus(status), true
		out[i] = outbox.AcceptOutcome{Result: res}
		return nil
	})
	return err
}

// sortKeyed reorders the keyed items among live into (form, key) order, leaving unkeyed
// items where they are: only keyed inserts can wait on another transaction's row, so one
// global order for them rules out deadlocks, while items that share a key keep their
// batch order (the earlier one is stored, the later one is its duplicate).
func sortKeyed(items []outbox.AcceptItem, live []int) {
	var pos, keyed []int
	for k, i := range live {
		if items[i].Submission.IdempotencyKey != "" {
			pos, keyed = append(pos, k), append(keyed, i)
		}
	}
	sort.SliceStable(keyed, func(x, y int) bool {
		a, b := items[keyed[x]].Submission, items[keyed[y]].Submission
		if a.Form != b.Form {
			return a.Form < b.Form
		}
		return a.IdempotencyKey < b.IdempotencyKey
	})
	for n, k := range pos {
		live[k] = keyed[n]
	}
}

// acceptArgs encodes one item as acceptOneSQL's parameters.
func acceptArgs(sub *outbox.Submission, deliveries []outbox.Delivery) ([]any, error) {
	p, err := acceptprep.Prepare(sub)
	if err != nil {
		return nil, err
	}
	created, data, meta, event := p.Created, p.Data, p.Meta, p.Event
	var key *string
	if sub.IdempotencyKey != "" {
		key = &sub.IdempotencyKey
	}
	n := len(deliveries)
	var (
		ids, routes, channels, recipients, statuses = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		attempts, maxAttempts                       = make([]int32, n), make([]int32, n)
		next, created2, updated                     = make([]time.Time, n), make([]time.Time, n), make([]time.Time, n)
		owners, tokens, lastErrs, providers, pmids  = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		payloads                                    = make([]string, n)
		locked, sent                                = make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
	)
	for i := range deliveries {
		d := outbox.PlannedDelivery(sub, deliveries[i], created)
		ids[i], routes[i], channels[i], recipients[i], statuses[i] = d.ID.String(), d.Route, string(d.Channel), d.Recipient, string(d.Status)
		attempts[i], maxAttempts[i] = int32(d.Attempts), int32(d.MaxAttempts)
		next[i], created2[i], updated[i] = d.NextAttemptAt, d.CreatedAt, d.UpdatedAt
		owners[i], tokens[i], lastErrs[i], providers[i], pmids[i] = d.LeaseOwner, d.LeaseToken, d.LastError, d.Provider, d.ProviderMessageID
		payloads[i] = string(d.Payload)
		if len(d.Payload) == 0 {
			payloads[i] = "{}"
		}
		locked[i] = pgtype.Timestamptz{Time: d.LockedUntil, Valid: !d.LockedUntil.IsZero()}
		sent[i] = pgtype.Timestamptz{Time: d.SentAt, Valid: !d.SentAt.IsZero()}
	}
	kinds, evData, evAt := make([]string, len(sub.Events)), make([]string, len(sub.Events)), make([]time.Time, len(sub.Events))
	for i, ev := range sub.Events {
		kinds[i], evData[i], evAt[i] = ev.Kind, string(ev.Data), orTime(ev.At, created)
		if evData[i] == "" {
			evData[i] = "{}"
		}
	}
	return []any{
		sub.ID, sub.Form, string(sub.Status), sub.Reason, string(data), string(meta), key,
		sub.ContentHash, sub.Test, created,
		ids, routes, channels, recipients, statuses, attempts, maxAttempts, next, owners, tokens,
		locked, lastErrs, providers, pmids, payloads, created2, updated, sent,
		outbox.EventSubmissionReceived, string(event), kinds, evData, evAt,
	}, nil
}

var _ outbox.BatchAccepter = (*Store)(nil)
