package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

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
	rows, err := s.r.QueryContext(ctx, qParkList)
	if err != nil {
		return nil, fmt.Errorf("list parked destinations: %w", err)
	}
	defer rows.Close()
	var out []outbox.ParkedDestination
	for rows.Next() {
		var held, leads int64
		p, err := scanParked(rows, &held, &leads)
		if err != nil {
			return nil, fmt.Errorf("list parked destinations: %w", err)
		}
		p.Held, p.Leads = int(held), int(leads)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list parked destinations: %w", err)
	}
	return out, nil
}

// scanParked reads a destinations row (queries/park.sql's column order), then more.
func scanParked(r scanner, more ...any) (outbox.ParkedDestination, error) {
	var p outbox.ParkedDestination
	var ch string
	var manual, parkedAt, intervalMS int64
	var probeAt sql.NullInt64
	var probe sql.NullString
	dst := append([]any{&p.Key, &ch, &p.Label, &p.Reason, &manual, &parkedAt, &probeAt, &intervalMS, &probe}, more...)
	if err := r.Scan(dst...); err != nil {
		return p, err
	}
	p.Channel = outbox.Channel(ch)
	p.Manual = manual != 0
	p.ParkedAt = fromMicros(parkedAt)
	p.ProbeAt = fromNullMicros(probeAt)
	p.ProbeInterval = time.Duration(intervalMS) * time.Millisecond
	if probe.Valid {
		id, err := uuid.Parse(probe.String)
		if err != nil {
			return p, fmt.Errorf("probe id: %w", err)
		}
		p.ProbeID = id
	}
	return p, nil
}

func (f flow) ParkTx(ctx context.Context, fn func(storeflow.ParkTx) error) error {
	return f.s.writeTx(ctx, func(tx *txStmts) error { return fn(parkTx{tx}) })
}

// parkTx runs the parking statements in one transaction on the single writer, which
// serializes them with every other write.
type parkTx struct{ tx txQuerier }

func (t parkTx) Destination(ctx context.Context, key string) (outbox.ParkedDestination, error) {
	p, err := scanParked(t.tx.QueryRowContext(ctx, qParkDestination, key))
	if errors.Is(err, sql.ErrNoRows) {
		return p, outbox.ErrNotFound
	}
	return p, err
}

func (t parkTx) InsertDestination(ctx context.Context, p outbox.Park) (bool, error) {
	probeAt := sql.NullInt64{}
	if !p.Manual {
		probeAt = nullMicros(p.ProbeAt)
	}
	manual := 0
	if p.Manual {
		manual = 1
	}
	res, err := t.tx.ExecContext(ctx, qParkInsertDestination, p.Destination.Key, string(p.Destination.Channel),
		p.Destination.Label, p.Reason, manual, micros(p.Now), probeAt, p.ProbeInterval.Milliseconds())
	return affected(res, err)
}

func (t parkTx) MakeManual(ctx context.Context, key string) error {
	_, err := t.tx.ExecContext(ctx, qParkMakeManual, key)
	return err
}

func (t parkTx) DeleteDestination(ctx context.Context, key string) error {
	_, err := t.tx.ExecContext(ctx, qParkDeleteDestination, key)
	return err
}

func (t parkTx) SetProbe(ctx context.Context, key string, probe uuid.UUID, at time.Time, interval time.Duration) error {
	id := sql.NullString{}
	if probe != uuid.Nil {
		id = sql.NullString{String: probe.String(), Valid: true}
	}
	_, err := t.tx.ExecContext(ctx, qParkSetProbe, key, id, micros(at), interval.Milliseconds())
	return err
}

func (t parkTx) HoldDelivery(ctx context.Context, id uuid.UUID, token, key, lastError, provider string, now time.Time) (bool, error) {
	return affected(t.tx.ExecContext(ctx, qParkHoldDelivery, id.String(), token, key, lastError, micros(now), provider))
}

func (t parkTx) InsertAttempt(ctx context.Context, a outbox.Attempt) error {
	_, err := t.tx.ExecContext(ctx, qParkInsertAttempt, a.DeliveryID.String(), a.Attempt, a.Provider,
		micros(a.StartedAt), micros(a.FinishedAt), string(a.Outcome), a.HTTPStatus, a.ErrorCode, a.Error,
		a.ProviderMessageID, a.BodySHA256)
	return err
}

func (t parkTx) OldestParked(ctx context.Context, key string) (uuid.UUID, error) {
	var id string
	err := t.tx.QueryRowContext(ctx, qParkOldest, key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return uuid.Nil, outbox.ErrNotFound
	}
	if err != nil {
		return uuid.Nil, err
	}
	return uuid.Parse(id)
}

func (t parkTx) MakeDue(ctx context.Context, id uuid.UUID, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, qParkMakeDue, id.String(), micros(now))
	return err
}

func (t parkTx) ResumeParked(ctx context.Context, key string, now time.Time) (int, error) {
	res, err := t.tx.ExecContext(ctx, qParkResume, key, micros(now))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// affected says whether an exec changed a row.
func affected(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func (t parkTx) InsertEvent(ctx context.Context, e outbox.Event) error {
	return flowTx(t).InsertEvent(ctx, e)
}
