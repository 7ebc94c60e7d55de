package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var (
	qDigestRouteSince      = queries.Must("DigestRouteSince")
	qUndigestedSubmissions = queries.Must("UndigestedSubmissions")
	qDigestPeriods         = queries.Must("DigestPeriods")
	qInsertDigest          = queries.Must("InsertDigest")
	qInsertDigestItems     = queries.Must("InsertDigestItems")
	qInsertDigestDelivery  = queries.Must("InsertDigestDelivery")
	qInsertDigestEvent     = queries.Must("InsertDigestEvent")

	// errDigestConflict rolls back a CreateDigest that found the period digested, or one
	// of its submissions listed, by another closer.
	errDigestConflict = errors.New("digest conflict")

	_ outbox.DigestStore = (*Store)(nil)
)

// DigestRouteSince implements outbox.DigestStore.
func (s *Store) DigestRouteSince(ctx context.Context, form, route string, since time.Time) (time.Time, error) {
	var got time.Time
	if err := s.pool.QueryRow(ctx, qDigestRouteSince, form, route, since).Scan(&got); err != nil {
		return time.Time{}, fmt.Errorf("digest route %s/%s: %w", form, route, err)
	}
	return got.UTC(), nil
}

// UndigestedSubmissions implements outbox.DigestStore.
func (s *Store) UndigestedSubmissions(ctx context.Context, form, route string, from, until time.Time) ([]outbox.DigestItem, error) {
	rows, err := s.pool.Query(ctx, qUndigestedSubmissions, form, from, until, route)
	if err != nil {
		return nil, fmt.Errorf("undigested submissions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.DigestItem, error) {
		var (
			it   outbox.DigestItem
			data []byte
		)
		if err := r.Scan(&it.ID, &it.CreatedAt, &data, &it.Test); err != nil {
			return it, err
		}
		it.CreatedAt = it.CreatedAt.UTC()
		return it, json.Unmarshal(data, &it.Data)
	})
	if err != nil {
		return nil, fmt.Errorf("undigested submissions: %w", err)
	}
	return out, nil
}

// DigestPeriods implements outbox.DigestStore.
func (s *Store) DigestPeriods(ctx context.Context, form, route string, from, until time.Time) ([]time.Time, error) {
	rows, err := s.pool.Query(ctx, qDigestPeriods, form, route, from, until)
	if err != nil {
		return nil, fmt.Errorf("digest periods: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (time.Time, error) {
		var t time.Time
		err := r.Scan(&t)
		return t.UTC(), err
	})
	if err != nil {
		return nil, fmt.Errorf("digest periods: %w", err)
	}
	return out, nil
}

// CreateDigest implements outbox.DigestStore. Under READ COMMITTED, an insert that meets
// a key another transaction is inserting waits for it, then skips the row if it
// committed: the skipped row is the conflict, and the whole transaction is rolled back.
func (s *Store) CreateDigest(ctx context.Context, d outbox.Digest, deliveries []outbox.Delivery) (bool, error) {
	if len(d.Items) == 0 {
		return false, errors.New("create digest: no submissions")
	}
	planned := d.PlannedDeliveries(deliveries)
	anchor := d.Items[0]
	err := txOn(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, qInsertDigest, d.Form, d.Route, d.PeriodStart, d.PeriodEnd, len(d.Items), anchor, d.CreatedAt)
		if err != nil {
			return fmt.Errorf("insert digest: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errDigestConflict
		}
		tag, err = tx.Exec(ctx, qInsertDigestItems, d.Form, d.Route, d.Items, d.PeriodStart)
		if err != nil {
			return fmt.Errorf("insert digest items: %w", err)
		}
		if tag.RowsAffected() != int64(len(d.Items)) {
			return errDigestConflict
		}
		for i, del := range planned {
			payload := string(del.Payload)
			if payload == "" {
				payload = "{}"
			}
			if _, err := tx.Exec(ctx, qInsertDigestDelivery,
				del.ID, anchor, del.Route, string(del.Channel), del.Recipient, string(del.Status),
				del.Attempts, del.MaxAttempts, del.NextAttemptAt, del.LeaseOwner, del.LeaseToken,
				nullTime(del.LockedUntil), del.LastError, del.Provider, del.ProviderMessageID, payload,
				del.CreatedAt, del.UpdatedAt, nullTime(del.SentAt)); err != nil {
				return fmt.Errorf("insert digest delivery %d: %w", i, err)
			}
		}
		data := string(d.Event.Data)
		if data == "" {
			data = "{}"
		}
		if _, err := tx.Exec(ctx, qInsertDigestEvent, outbox.EventDigestCreated, anchor, data, d.CreatedAt); err != nil {
			return fmt.Errorf("insert digest event: %w", err)
		}
		return nil
	})
	switch {
	case errors.Is(err, errDigestConflict):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("create digest %s/%s %s: %w", d.Form, d.Route, d.PeriodStart.Format(time.RFC3339), err)
	}
	return true, nil
}

// nullTime is NULL for the zero time (not leased, not sent).
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
