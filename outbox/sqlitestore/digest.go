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

var (
	qDigestRouteSince                         = queries.Must("DigestRouteSince")
	qUndigestedSubmissions                    = queries.Must("UndigestedSubmissions")
	qDigestPeriods                            = queries.Must("DigestPeriods")
	qInsertDigest                             = queries.Must("InsertDigest")
	qInsertDigestItem                         = queries.Must("InsertDigestItem")
	qInsertDigestEvent                        = queries.Must("InsertDigestEvent")
	errDigestConflict                         = errors.New("digest conflict")
	_                      outbox.DigestStore = (*Store)(nil)
)

// DigestRouteSince implements outbox.DigestStore.
func (s *Store) DigestRouteSince(ctx context.Context, form, route string, since time.Time) (time.Time, error) {
	var got int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, qDigestRouteSince, form, route, micros(since)).Scan(&got)
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("digest route %s/%s: %w", form, route, err)
	}
	return fromMicros(got), nil
}

// UndigestedSubmissions implements outbox.DigestStore.
func (s *Store) UndigestedSubmissions(ctx context.Context, form, route string, from, until time.Time) ([]outbox.DigestItem, error) {
	rows, err := s.r.QueryContext(ctx, qUndigestedSubmissions, form, micros(from), micros(until), route)
	if err != nil {
		return nil, fmt.Errorf("undigested submissions: %w", err)
	}
	defer rows.Close()
	var out []outbox.DigestItem
	for rows.Next() {
		var (
			it      outbox.DigestItem
			id      string
			created int64
			data    string
		)
		if err := rows.Scan(&id, &created, &data, &it.Test); err != nil {
			return nil, fmt.Errorf("undigested submissions: %w", err)
		}
		if it.ID, err = uuid.Parse(id); err != nil {
			return nil, fmt.Errorf("undigested submissions: id: %w", err)
		}
		if err := json.Unmarshal([]byte(data), &it.Data); err != nil {
			return nil, fmt.Errorf("undigested submissions: data: %w", err)
		}
		it.CreatedAt = fromMicros(created)
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("undigested submissions: %w", err)
	}
	return out, nil
}

// DigestPeriods implements outbox.DigestStore.
func (s *Store) DigestPeriods(ctx context.Context, form, route string, from, until time.Time) ([]time.Time, error) {
	rows, err := s.r.QueryContext(ctx, qDigestPeriods, form, route, micros(from), micros(until))
	if err != nil {
		return nil, fmt.Errorf("digest periods: %w", err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("digest periods: %w", err)
		}
		out = append(out, fromMicros(v))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("digest periods: %w", err)
	}
	return out, nil
}

// CreateDigest implements outbox.DigestStore. The single writer connection serialises it
// with every other write, so a conflict seen here is a digest another closer committed.
func (s *Store) CreateDigest(ctx context.Context, d outbox.Digest, deliveries []outbox.Delivery) (bool, error) {
	if len(d.Items) == 0 {
		return false, errors.New("create digest: no submissions")
	}
	planned := d.PlannedDeliveries(deliveries)
	anchor := d.Items[0].String()
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, qInsertDigest, d.Form, d.Route, micros(d.PeriodStart), micros(d.PeriodEnd),
			len(d.Items), anchor, micros(d.CreatedAt))
		if err != nil {
			return fmt.Errorf("insert digest: %w", err)
		}
		if err := oneRow(res); err != nil {
			return err
		}
		for _, id := range d.Items {
			res, err := tx.ExecContext(ctx, qInsertDigestItem, d.Form, d.Route, id.String(), micros(d.PeriodStart))
			if err != nil {
				return fmt.Errorf("insert digest item: %w", err)
			}
			if err := oneRow(res); err != nil {
				return err
			}
		}
		for i, del := range planned {
			if _, err := tx.ExecContext(ctx, qInsertDelivery,
				del.ID.String(), anchor, del.Route, string(del.Channel), del.Recipient, string(del.Status),
				del.Attempts, del.MaxAttempts, micros(del.NextAttemptAt), del.LeaseOwner, del.LeaseToken,
				nullMicros(del.LockedUntil), del.LastError, del.Provider, del.ProviderMessageID, payloadText(del.Payload),
				micros(del.CreatedAt), micros(del.UpdatedAt), nullMicros(del.SentAt)); err != nil {
				return fmt.Errorf("insert digest delivery %d: %w", i, err)
			}
		}
		data := string(d.Event.Data)
		if data == "" {
			data = "{}"
		}
		if _, err := tx.ExecContext(ctx, qInsertDigestEvent, outbox.EventDigestCreated, anchor, data, micros(d.CreatedAt)); err != nil {
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

// oneRow is nil when res inserted its row, errDigestConflict when ON CONFLICT DO NOTHING
// skipped it.
func oneRow(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return errDigestConflict
	}
	return nil
}

// payloadText is a payload as stored: an empty one is the empty object.
func payloadText(p []byte) string {
	if len(p) == 0 {
		return "{}"
	}
	return string(p)
}
