package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Accept writes sub, its deliveries and a submission.received event in one transaction.
//
// A submission whose (form, idempotency key) or whose id is already stored is a duplicate:
// nothing is written and the stored submission's id and status come back with Duplicate
// set. Matching on the id too makes a spool replay of an already stored submission a
// no-op. Deliveries are stored as given, except that a missing id, status, next attempt
// time or creation time is filled in (new UUIDv7; pending, or skipped when sub is not
// accepted; sub's creation time); the caller's values are not modified.
func (s *Store) Accept(ctx context.Context, sub *outbox.Submission, deliveries []outbox.Delivery) (outbox.AcceptResult, error) {
	if sub == nil || sub.ID == uuid.Nil {
		return outbox.AcceptResult{}, errors.New("accept submission: missing submission id")
	}
	created := orNow(sub.CreatedAt)
	data, err := json.Marshal(sub.Data)
	if err != nil {
		return outbox.AcceptResult{}, fmt.Errorf("accept submission %s: data: %w", sub.ID, err)
	}
	if sub.Data == nil {
		data = []byte("{}")
	}
	meta, err := json.Marshal(sub.Meta)
	if err != nil {
		return outbox.AcceptResult{}, fmt.Errorf("accept submission %s: meta: %w", sub.ID, err)
	}
	event, err := json.Marshal(map[string]string{"form": sub.Form, "status": string(sub.Status)})
	if err != nil {
		return outbox.AcceptResult{}, fmt.Errorf("accept submission %s: event: %w", sub.ID, err)
	}
	var key sql.NullString
	if sub.IdempotencyKey != "" {
		key = sql.NullString{String: sub.IdempotencyKey, Valid: true}
	}

	res := outbox.AcceptResult{ID: sub.ID, Status: sub.Status}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		// The single writer connection serializes Accepts, so looking first is race-free.
		var id, status string
		err := tx.QueryRowContext(ctx, `SELECT id, status FROM submissions
			WHERE id = ? OR (form = ? AND idempotency_key = ?)
			ORDER BY id = ? LIMIT 1`, sub.ID.String(), sub.Form, key, sub.ID.String()).Scan(&id, &status)
		switch {
		case err == nil:
			orig, err := uuid.Parse(id)
			if err != nil {
				return err
			}
			res = outbox.AcceptResult{ID: orig, Status: outbox.SubmissionStatus(status), Duplicate: true}
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("look up duplicate: %w", err)
		}

		if _, err := tx.ExecContext(ctx, `INSERT INTO submissions (`+submissionColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sub.ID.String(), sub.Form, string(sub.Status), sub.Reason, string(data), string(meta),
			key, sub.ContentHash, sub.Test, micros(created)); err != nil {
			return fmt.Errorf("insert submission: %w", err)
		}
		for i := range deliveries {
			d := plannedDelivery(sub, deliveries[i], created)
			payload := string(d.Payload)
			if len(d.Payload) == 0 {
				payload = "{}"
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO deliveries (`+deliveryColumns+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				d.ID.String(), sub.ID.String(), d.Route, string(d.Channel), d.Recipient, string(d.Status),
				d.Attempts, d.MaxAttempts, micros(d.NextAttemptAt), d.LeaseOwner, d.LeaseToken,
				nullMicros(d.LockedUntil), d.LastError, d.Provider, d.ProviderMessageID, payload,
				micros(d.CreatedAt), micros(d.UpdatedAt), nullMicros(d.SentAt)); err != nil {
				return fmt.Errorf("insert delivery %d (route %q): %w", i, d.Route, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (kind, submission_id, delivery_id, data, at)
			VALUES (?, ?, NULL, ?, ?)`,
			outbox.EventSubmissionReceived, sub.ID.String(), string(event), micros(created)); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
		for _, ev := range sub.Events {
			if _, err := tx.ExecContext(ctx, `INSERT INTO events (kind, submission_id, delivery_id, data, at)
				VALUES (?, ?, NULL, ?, ?)`,
				ev.Kind, sub.ID.String(), eventJSON(ev.Data), micros(orTime(ev.At, created))); err != nil {
				return fmt.Errorf("insert %s event: %w", ev.Kind, err)
			}
		}
		return nil
	})
	if err != nil {
		return outbox.AcceptResult{}, fmt.Errorf("accept submission %s: %w", sub.ID, err)
	}
	return res, nil
}

// eventJSON is an event's JSON data, "{}" when the caller gave none.
func eventJSON(data []byte) string {
	if len(data) == 0 {
		return "{}"
	}
	return string(data)
}

// plannedDelivery fills what the caller may leave unset.
func plannedDelivery(sub *outbox.Submission, d outbox.Delivery, created time.Time) outbox.Delivery {
	if d.ID == uuid.Nil {
		d.ID = uuid.Must(uuid.NewV7())
	}
	d.SubmissionID = sub.ID
	if d.Status == "" {
		d.Status = outbox.DeliveryPending
		if sub.Status != outbox.SubmissionAccepted {
			d.Status = outbox.DeliverySkipped
		}
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = created
	}
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = d.CreatedAt
	}
	if d.NextAttemptAt.IsZero() {
		d.NextAttemptAt = d.CreatedAt
	}
	return d
}
