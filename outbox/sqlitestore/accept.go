package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/acceptprep"
)

// preparedAccept is what AcceptBatch encodes before it touches the database: key is the
// bound idempotency key (NULL when none or unbound), unbound the key of a submission
// that does not bind it (see outbox.BindsIdempotencyKey).
type preparedAccept struct {
	acceptprep.Prepared
	key, unbound sql.NullString
}

func prepareAccept(sub *outbox.Submission) (preparedAccept, error) {
	enc, err := acceptprep.Prepare(sub)
	if err != nil {
		return preparedAccept{}, err
	}
	p := preparedAccept{Prepared: enc}
	p.key = sql.NullString{String: enc.BoundKey, Valid: enc.BoundKey != ""}
	p.unbound = sql.NullString{String: enc.UnboundKey, Valid: enc.UnboundKey != ""}
	return p, nil
}

// acceptIn writes one item inside the caller's write transaction (see
// outbox.BatchAccepter). Matching a duplicate on the id too makes a spool replay of an
// already stored submission a no-op.
func acceptIn(ctx context.Context, tx txQuerier, sub *outbox.Submission, deliveries []outbox.Delivery, p preparedAccept) (outbox.AcceptResult, error) {
	created, key := p.Created, p.key
	// The single writer connection serializes Accepts, so looking first is race-free.
	var id, status, hash string
	err := tx.QueryRowContext(ctx, qFindDuplicate, sub.ID.String(), sub.Form, key, sub.ID.String()).Scan(&id, &status, &hash)
	switch {
	case err == nil:
		orig, err := uuid.Parse(id)
		if err != nil {
			return outbox.AcceptResult{}, err
		}
		return outbox.DuplicateResult(sub, orig, outbox.SubmissionStatus(status), hash), nil
	case !errors.Is(err, sql.ErrNoRows):
		return outbox.AcceptResult{}, fmt.Errorf("look up duplicate: %w", err)
	}

	if _, err := tx.ExecContext(ctx, qInsertSubmission,
		sub.ID.String(), sub.Form, string(sub.Status), sub.Reason, string(p.Data), string(p.Meta),
		key, sub.ContentHash, sub.Test, micros(created), p.unbound); err != nil {
		return outbox.AcceptResult{}, fmt.Errorf("insert submission: %w", err)
	}
	for i := range deliveries {
		d := outbox.PlannedDelivery(sub, deliveries[i], created)
		if err := insertDelivery(ctx, tx, d); err != nil { // digest.go
			return outbox.AcceptResult{}, fmt.Errorf("insert delivery %d (route %q): %w", i, d.Route, err)
		}
	}
	if _, err := tx.ExecContext(ctx, qInsertSubmissionEvent,
		outbox.EventSubmissionReceived, sub.ID.String(), "", string(p.Event), micros(created)); err != nil {
		return outbox.AcceptResult{}, fmt.Errorf("insert event: %w", err)
	}
	for _, ev := range sub.Events { // e.g. schema.drift, in the same transaction
		data := string(ev.Data)
		if data == "" {
			data = "{}"
		}
		del := ""
		if ev.DeliveryID != uuid.Nil {
			del = ev.DeliveryID.String()
		}
		if _, err := tx.ExecContext(ctx, qInsertSubmissionEvent,
			ev.Kind, sub.ID.String(), del, data, micros(orTime(ev.At, created))); err != nil {
			return outbox.AcceptResult{}, fmt.Errorf("insert %s event: %w", ev.Kind, err)
		}
	}
	if err := insertFiles(ctx, tx, sub); err != nil { // files.go
		return outbox.AcceptResult{}, err
	}
	return outbox.AcceptResult{ID: sub.ID, Status: sub.Status}, nil
}
