package pgstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/acceptprep"
)

// Accept writes sub, its deliveries and a submission.received event in one transaction.
//
// A submission whose (form, idempotency key) or whose id is already stored is a duplicate:
// nothing is written and the stored submission's id and status come back with Duplicate
// set. Matching on the id too makes a spool replay of an already stored submission a
// no-op. Concurrent Accepts with one key are safe: INSERT ... ON CONFLICT DO NOTHING waits
// for the first inserter to commit, then finds its row. Deliveries are stored as given,
// except that a missing id, status, next attempt time or creation time is filled in (new
// UUIDv7; pending, or skipped when sub is not accepted; sub's creation time); the caller's
// values are not modified.
func (s *Store) Accept(ctx context.Context, sub *outbox.Submission, deliveries []outbox.Delivery) (outbox.AcceptResult, error) {
	p, err := acceptprep.Prepare(sub)
	if err != nil {
		return outbox.AcceptResult{}, err
	}
	created, data, meta, event := p.Created, p.Data, p.Meta, p.Event
	// An unbound key (see outbox.BindsIdempotencyKey) is NULL in the unique column, so
	// the insert cannot collide on it and the lookup below cannot match it.
	var key, unbound *string
	if p.BoundKey != "" {
		key = &p.BoundKey
	}
	if p.UnboundKey != "" {
		unbound = &p.UnboundKey
	}

	res := outbox.AcceptResult{ID: sub.ID, Status: sub.Status}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		var inserted uuid.UUID
		err := tx.QueryRow(ctx, `INSERT INTO submissions (`+submissionColumns+`, unbound_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT DO NOTHING RETURNING id`,
			sub.ID, sub.Form, string(sub.Status), sub.Reason, string(data), string(meta),
			key, sub.ContentHash, sub.Test, created, unbound).Scan(&inserted)
		if isNoRows(err) {
			var (
				id           uuid.UUID
				status, hash string
			)
			err := tx.QueryRow(ctx, `SELECT id, status, content_hash FROM submissions
				WHERE (form = $2 AND idempotency_key = $3) OR id = $1
				ORDER BY id = $1 DESC LIMIT 1`, sub.ID, sub.Form, key).Scan(&id, &status, &hash)
			if err != nil {
				return fmt.Errorf("look up duplicate: %w", err)
			}
			res = outbox.DuplicateResult(sub, id, outbox.SubmissionStatus(status), hash)
			return nil
		}
		if err != nil {
			return fmt.Errorf("insert submission: %w", err)
		}

		b := &pgx.Batch{}
		for i := range deliveries {
			d := outbox.PlannedDelivery(sub, deliveries[i], created)
			payload := string(d.Payload)
			if len(d.Payload) == 0 {
				payload = "{}"
			}
			b.Queue(`INSERT INTO deliveries (`+deliveryColumns+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
				d.ID, sub.ID, d.Route, string(d.Channel), d.Recipient, string(d.Status),
				d.Attempts, d.MaxAttempts, d.NextAttemptAt, d.LeaseOwner, d.LeaseToken,
				nullTime(d.LockedUntil), d.LastError, d.Provider, d.ProviderMessageID, payload,
				d.CreatedAt, d.UpdatedAt, nullTime(d.SentAt))
		}
		b.Queue(`INSERT INTO events (kind, submission_id, data, at) VALUES ($1, $2, $3, $4)`,
			outbox.EventSubmissionReceived, sub.ID, string(event), created)
		for _, ev := range sub.Events {
			data := string(ev.Data)
			if data == "" {
				data = "{}"
			}
			b.Queue(`INSERT INTO events (kind, submission_id, data, at) VALUES ($1, $2, $3, $4)`,
				ev.Kind, sub.ID, data, orTime(ev.At, created))
		}
		br := tx.SendBatch(ctx, b)
		for i := range deliveries {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return fmt.Errorf("insert delivery %d (route %q): %w", i, deliveries[i].Route, err)
			}
		}
		if _, err := br.Exec(); err != nil {
			br.Close()
			return fmt.Errorf("insert event: %w", err)
		}
		for _, ev := range sub.Events {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return fmt.Errorf("insert %s event: %w", ev.Kind, err)
			}
		}
		return br.Close()
	})
	if err != nil {
		return outbox.AcceptResult{}, fmt.Errorf("accept submission %s: %w", sub.ID, err)
	}
	return res, nil
}
