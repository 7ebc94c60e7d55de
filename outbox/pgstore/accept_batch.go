package pgstore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/acceptprep"
)

// AcceptBatch accepts every item in one transaction (group commit): one WAL flush for the
// lot. See outbox.BatchAccepter.
//
// One statement (AcceptSet, queries/accept.sql) writes the items, encoded once
// (acceptColumns). It writes the whole batch at once; when it cannot (a submission id
// appears twice, and the statement joins deliveries to their submission by id) or it
// failed, the same statement runs once per item, pipelined in one transaction and one
// round trip (acceptEach), which finds an item whose own row is bad: that item is set
// aside with its own error and the transaction rerun without it; a deadlock or
// serialization failure reruns it (a few times); any other failure answers every
// remaining item with the error. Keyed items are written in (form, key) order (see
// sortKeyed). A lone post is a batch of one (outbox.AcceptOne).
func (s *Store) AcceptBatch(ctx context.Context, items []outbox.AcceptItem) []outbox.AcceptOutcome {
	if slices.ContainsFunc(items, hasFiles) {
		return s.acceptBatchWithFiles(ctx, items) // files.go
	}
	out := make([]outbox.AcceptOutcome, len(items))
	rows := make([]acceptRow, len(items))
	var live []int
	for i, it := range items {
		r, err := newAcceptRow(it)
		if err != nil {
			out[i].Err = err
			continue
		}
		rows[i] = r
		live = append(live, i)
	}
	sortKeyed(items, live)

	if len(live) > 0 && distinctSubmissions(items, live) && s.acceptSet(ctx, rows, live, out) {
		return out
	}
	isolate(live, func(live []int) (int, error) { return s.acceptEach(ctx, rows, live, out) },
		func(i int, err error) {
			out[i] = outbox.AcceptOutcome{Err: fmt.Errorf("accept submission %s: %w", items[i].Submission.ID, err)}
		},
		func(i int, err error) {
			out[i] = outbox.AcceptOutcome{Err: fmt.Errorf("accept submission %s: %w: %w", items[i].Submission.ID, outbox.ErrBatchMemberFailed, err)}
		})
	return out
}

// acceptEach runs AcceptSet once per live item, pipelined in one transaction (see
// isolate): each statement sees the rows the earlier ones wrote, so an item repeating an
// earlier one's id is its duplicate.
func (s *Store) acceptEach(ctx context.Context, rows []acceptRow, live []int, out []outbox.AcceptOutcome) (int, error) {
	bad := -1
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var (
			dups []int
			err  error
		)
		bad, err = pipeline(ctx, tx, acceptSetSQL, live, func(i int) []any { return newAcceptColumns(rows, []int{i}).params() }, func(i int, row pgx.Row) error {
			sub := rows[i].sub
			var id [16]byte
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
		if err := s.lookUpDuplicates(ctx, tx, rows, dups, out); err != nil {
			return err
		}
		return outbox.BeforeCommit(ctx)
	})
	return bad, err
}

// lookUpDuplicates answers each item in dups, whose insert was skipped, with what it
// duplicated.
func (s *Store) lookUpDuplicates(ctx context.Context, tx batchSender, rows []acceptRow, dups []int, out []outbox.AcceptOutcome) error {
	if len(dups) == 0 {
		return nil
	}
	_, err := pipeline(ctx, tx, duplicateSQL, dups, func(i int) []any {
		r := &rows[i]
		return []any{r.id, r.sub.Form, r.boundKey}
	}, func(i int, row pgx.Row) error {
		var (
			id           [16]byte
			status, hash string
		)
		if err := row.Scan(&id, &status, &hash); err != nil {
			return fmt.Errorf("look up duplicate of %s: %w", rows[i].sub.ID, err)
		}
		out[i] = outbox.AcceptOutcome{Result: outbox.DuplicateResult(rows[i].sub, id, outbox.SubmissionStatus(status), hash)}
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

// acceptRow is one item prepared once, whichever way AcceptSet writes it
// (acceptColumns.add). Its deliveries are planned here, so that an id generated for one
// stays the same across reruns. The values have the types pgx
// encodes without reflection or driver.Valuer (a uuid.UUID would be formatted as text
// and parsed back): [16]byte for a uuid, string, int32, bool, time.Time, and slices of
// those.
type acceptRow struct {
	sub               *outbox.Submission
	id                [16]byte
	data, meta, event string // JSON: sub.Data, sub.Meta, the submission.received event's data
	boundKey, unbound string // sub's idempotency key in one of them (acceptprep.Prepared)
	created           time.Time
	deliveries        []outbox.Delivery // planned (outbox.PlannedDelivery)
}

func newAcceptRow(it outbox.AcceptItem) (acceptRow, error) {
	sub := it.Submission
	p, err := acceptprep.Prepare(sub)
	if err != nil {
		return acceptRow{}, err
	}
	r := acceptRow{sub: sub, id: sub.ID, data: string(p.Data), meta: string(p.Meta), event: string(p.Event),
		boundKey: p.BoundKey, unbound: p.UnboundKey, created: p.Created, deliveries: make([]outbox.Delivery, len(it.Deliveries))}
	for k := range it.Deliveries {
		r.deliveries[k] = outbox.PlannedDelivery(sub, it.Deliveries[k], p.Created)
	}
	return r, nil
}

// plannedDeliveries are planned deliveries as parallel arrays, for acceptSetSQL.
type plannedDeliveries struct {
	id                                              [][16]byte
	route, channel, recipient, status, owner, token []string
	lastErr, provider, pmid, payload                []string
	attempts, maxAttempts                           []int32
	next, locked, created, updated, sent            []time.Time
	isLocked, isSent                                []bool // locked and sent are NULL where false
}

func (c *plannedDeliveries) grow(n int) {
	c.id = slices.Grow(c.id, n)
	for _, s := range []*[]string{&c.route, &c.channel, &c.recipient, &c.status, &c.owner, &c.token,
		&c.lastErr, &c.provider, &c.pmid, &c.payload} {
		*s = slices.Grow(*s, n)
	}
	c.attempts, c.maxAttempts = slices.Grow(c.attempts, n), slices.Grow(c.maxAttempts, n)
	for _, t := range []*[]time.Time{&c.next, &c.locked, &c.created, &c.updated, &c.sent} {
		*t = slices.Grow(*t, n)
	}
	c.isLocked, c.isSent = slices.Grow(c.isLocked, n), slices.Grow(c.isSent, n)
}

// add appends a planned delivery.
func (c *plannedDeliveries) add(d *outbox.Delivery) {
	payload := string(d.Payload)
	if len(d.Payload) == 0 {
		payload = "{}"
	}
	c.id = append(c.id, d.ID)
	c.route, c.channel, c.recipient = append(c.route, d.Route), append(c.channel, string(d.Channel)), append(c.recipient, d.Recipient)
	c.status, c.owner, c.token = append(c.status, string(d.Status)), append(c.owner, d.LeaseOwner), append(c.token, d.LeaseToken)
	c.lastErr, c.provider, c.pmid = append(c.lastErr, d.LastError), append(c.provider, d.Provider), append(c.pmid, d.ProviderMessageID)
	c.payload = append(c.payload, payload)
	c.attempts, c.maxAttempts = append(c.attempts, int32(d.Attempts)), append(c.maxAttempts, int32(d.MaxAttempts))
	c.next, c.created, c.updated = append(c.next, d.NextAttemptAt), append(c.created, d.CreatedAt), append(c.updated, d.UpdatedAt)
	c.locked, c.isLocked = append(c.locked, d.LockedUntil), append(c.isLocked, !d.LockedUntil.IsZero())
	c.sent, c.isSent = append(c.sent, d.SentAt), append(c.isSent, !d.SentAt.IsZero())
}

// params appends the arrays to args: the ids, then PlannedDeliveryFields' order (queries/accept.sql).
func (c *plannedDeliveries) params(args []any) []any {
	return append(args, c.id, c.route, c.channel, c.recipient, c.status, c.attempts, c.maxAttempts, c.next,
		c.owner, c.token, c.locked, c.isLocked, c.lastErr, c.provider, c.pmid, c.payload, c.created, c.updated,
		c.sent, c.isSent)
}

// extraEvents are a submission's extra events (sub.Events) as parallel arrays, the data
// "{}" when empty and the time created when zero.
type extraEvents struct {
	kind, data []string
	at         []time.Time
	delivery   []string // the event's delivery id, "" for none (stored as NULL)
}

func (c *extraEvents) grow(n int) {
	c.kind, c.data, c.at = slices.Grow(c.kind, n), slices.Grow(c.data, n), slices.Grow(c.at, n)
	c.delivery = slices.Grow(c.delivery, n)
}

func (c *extraEvents) add(ev outbox.Event, created time.Time) {
	data := string(ev.Data)
	if data == "" {
		data = "{}"
	}
	c.kind, c.data, c.at = append(c.kind, ev.Kind), append(c.data, data), append(c.at, orTime(ev.At, created))
	del := ""
	if ev.DeliveryID != uuid.Nil {
		del = ev.DeliveryID.String()
	}
	c.delivery = append(c.delivery, del)
}
