package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

var (
	qParkDestination       = queries.Must("ParkDestination")
	qParkInsertDestination = queries.Must("ParkInsertDestination")
	qParkMakeManual        = queries.Must("ParkMakeManual")
	qParkDeleteDestination = queries.Must("ParkDeleteDestination")
	qParkSetProbe          = queries.Must("ParkSetProbe")
	qParkHoldDelivery      = queries.Must("ParkHoldDelivery")
	qParkInsertAttempt     = queries.Must("ParkInsertAttempt")
	qParkOldest            = queries.Must("ParkOldest")
	qParkMakeDue           = queries.Must("ParkMakeDue")
	qParkResume            = queries.Must("ParkResume")
	qParkList              = queries.Must("ParkList")
)

// ParkDestination implements outbox.DestinationStore (storeflow.Park).
func (s *Store) ParkDestination(ctx context.Context, p outbox.Park) (bool, error) {
	return storeflow.Park(ctx, flow{s}, p)
}

// HoldDelivery implements outbox.DestinationStore (storeflow.Hold).
func (s *Store) HoldDelivery(ctx context.Context, h outbox.Hold) error {
	return storeflow.Hold(ctx, flow{s}, h)
}

// StartProbe implements outbox.DestinationStore (storeflow.StartProbe).
func (s *Store) StartProbe(ctx context.Context, key string, now time.Time, guard time.Duration) (uuid.UUID, error) {
	return storeflow.StartProbe(ctx, flow{s}, key, now, guard)
}

// UnparkDestination implements outbox.DestinationStore (storeflow.Unpark).
func (s *Store) UnparkDestination(ctx context.Context, key string, probe uuid.UUID, by string, now time.Time) (int, error) {
	return storeflow.Unpark(ctx, flow{s}, key, probe, by, now)
}

// ListParkedDestinations implements outbox.DestinationStore.
func (s *Store) ListParkedDestinations(ctx context.Context) ([]outbox.ParkedDestination, error) {
	rows, err := s.pool.Query(ctx, qParkList)
	if err != nil {
		return nil, fmt.Errorf("list parked destinations: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.ParkedDestination, error) {
		var held, leads int64
		p, err := scanParked(r, &held, &leads)
		p.Held, p.Leads = int(held), int(leads)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("list parked destinations: %w", err)
	}
	return out, nil
}

// scanParked reads a destinations row (queries/park.sql's column order), then more.
func scanParked(r pgx.Row, more ...any) (outbox.ParkedDestination, error) {
	var p outbox.ParkedDestination
	var ch string
	var probeAt *time.Time
	var intervalMS int64
	var probe *uuid.UUID
	dst := append([]any{&p.Key, &ch, &p.Label, &p.Reason, &p.Manual, &p.ParkedAt, &probeAt, &intervalMS, &probe}, more...)
	if err := r.Scan(dst...); err != nil {
		return p, err
	}
	p.Channel = outbox.Channel(ch)
	p.ParkedAt = p.ParkedAt.UTC()
	if probeAt != nil {
		p.ProbeAt = probeAt.UTC()
	}
	p.ProbeInterval = time.Duration(intervalMS) * time.Millisecond
	if probe != nil {
		p.ProbeID = *probe
	}
	return p, nil
}

func (f flow) ParkTx(ctx context.Context, fn func(storeflow.ParkTx) error) error {
	return f.s.tx(ctx, func(tx pgx.Tx) error { return fn(parkTx{tx}) })
}

// parkTx runs the parking statements in one transaction; Destination locks the row, so
// concurrent instances serialize on one destination.
type parkTx struct{ tx pgx.Tx }

func (t parkTx) Destination(ctx context.Context, key string) (outbox.ParkedDestination, error) {
	p, err := scanParked(t.tx.QueryRow(ctx, qParkDestination, key))
	if isNoRows(err) {
		return p, outbox.ErrNotFound
	}
	return p, err
}

func (t parkTx) InsertDestination(ctx context.Context, p outbox.Park) (bool, error) {
	var probeAt *time.Time
	if !p.Manual && !p.ProbeAt.IsZero() {
		probeAt = &p.ProbeAt
	}
	tag, err := t.tx.Exec(ctx, qParkInsertDestination, p.Destination.Key, string(p.Destination.Channel),
		p.Destination.Label, p.Reason, p.Manual, p.Now, probeAt, p.ProbeInterval.Milliseconds())
	return tag.RowsAffected() > 0, err
}

func (t parkTx) MakeManual(ctx context.Context, key string) error {
	_, err := t.tx.Exec(ctx, qParkMakeManual, key)
	return err
}

func (t parkTx) DeleteDestination(ctx context.Context, key string) error {
	_, err := t.tx.Exec(ctx, qParkDeleteDestination, key)
	return err
}

func (t parkTx) SetProbe(ctx context.Context, key string, probe uuid.UUID, at time.Time, interval time.Duration) error {
	_, err := t.tx.Exec(ctx, qParkSetProbe, key, nullID(probe), at, interval.Milliseconds())
	return err
}

func (t parkTx) HoldDelivery(ctx context.Context, id uuid.UUID, token, key, lastError, provider string, now time.Time) (bool, error) {
	tag, err := t.tx.Exec(ctx, qParkHoldDelivery, [16]byte(id), token, key, lastError, now, provider)
	return tag.RowsAffected() > 0, err
}

func (t parkTx) InsertAttempt(ctx context.Context, a outbox.Attempt) error {
	_, err := t.tx.Exec(ctx, qParkInsertAttempt, [16]byte(a.DeliveryID), a.Attempt, a.Provider, a.StartedAt,
		a.FinishedAt, string(a.Outcome), a.HTTPStatus, a.ErrorCode, a.Error, a.ProviderMessageID, a.BodySHA256)
	return err
}

func (t parkTx) OldestParked(ctx context.Context, key string) (uuid.UUID, error) {
	var id uuid.UUID
	err := t.tx.QueryRow(ctx, qParkOldest, key).Scan(&id)
	if isNoRows(err) {
		return id, outbox.ErrNotFound
	}
	return id, err
}

func (t parkTx) MakeDue(ctx context.Context, id uuid.UUID, now time.Time) error {
	_, err := t.tx.Exec(ctx, qParkMakeDue, [16]byte(id), now)
	return err
}

func (t parkTx) ResumeParked(ctx context.Context, key string, now time.Time) (int, error) {
	tag, err := t.tx.Exec(ctx, qParkResume, key, now)
	return int(tag.RowsAffected()), err
}

func (t parkTx) InsertEvent(ctx context.Context, e outbox.Event) error {
	return flowTx(t).InsertEvent(ctx, e)
}
