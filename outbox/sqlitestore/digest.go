package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

var (
	qDigestRouteSince                         = queries.Must("DigestRouteSince")
	qUndigestedSubmissions                    = queries.Must("UndigestedSubmissions")
	qDigestPeriods                            = queries.Must("DigestPeriods")
	qInsertDigest                             = queries.Must("InsertDigest")
	qInsertDigestItem                         = queries.Must("InsertDigestItem")
	_                      outbox.DigestStore = (*Store)(nil)
)

// DigestRouteSince implements outbox.DigestStore.
func (s *Store) DigestRouteSince(ctx context.Context, form, route string, since time.Time) (time.Time, error) {
	var got int64
	err := s.writeTx(ctx, func(tx *txStmts) error {
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

// CreateDigest implements outbox.DigestStore; storeflow.CreateDigest runs its steps
// over the flowTx methods below. The single writer connection serialises it with every
// other write, so a conflict seen here is a digest another closer committed.
func (s *Store) CreateDigest(ctx context.Context, d outbox.Digest, deliveries []outbox.Delivery) (bool, error) {
	return storeflow.CreateDigest(ctx, flow{s}, d, deliveries)
}

func (t flowTx) InsertDigest(ctx context.Context, d outbox.Digest) (bool, error) {
	n, err := t.changed(ctx, qInsertDigest, d.Form, d.Route, micros(d.PeriodStart), micros(d.PeriodEnd),
		len(d.Items), d.Items[0].String(), micros(d.CreatedAt))
	return n > 0, err
}

// InsertDigestItems lists d.Items one statement each, up to the first one another
// digest of the route lists.
func (t flowTx) InsertDigestItems(ctx context.Context, d outbox.Digest) (int, error) {
	for i, id := range d.Items {
		n, err := t.changed(ctx, qInsertDigestItem, d.Form, d.Route, id.String(), micros(d.PeriodStart))
		if err != nil || n == 0 {
			return i, err
		}
	}
	return len(d.Items), nil
}

func (t flowTx) InsertDelivery(ctx context.Context, del outbox.Delivery) error {
	return insertDelivery(ctx, t.tx, del)
}

// insertDelivery stores one planned delivery (outbox.PlannedDelivery).
func insertDelivery(ctx context.Context, tx txQuerier, d outbox.Delivery) error {
	_, err := tx.ExecContext(ctx, qInsertDelivery,
		d.ID.String(), d.SubmissionID.String(), d.Route, string(d.Channel), d.Recipient, string(d.Status),
		d.Attempts, d.MaxAttempts, micros(d.NextAttemptAt), d.LeaseOwner, d.LeaseToken,
		nullMicros(d.LockedUntil), d.LastError, d.Provider, d.ProviderMessageID, payloadText(d.Payload),
		micros(d.CreatedAt), micros(d.UpdatedAt), nullMicros(d.SentAt))
	return err
}

// payloadText is a payload as stored: an empty one is the empty object.
func payloadText(p []byte) string {
	if len(p) == 0 {
		return "{}"
	}
	return string(p)
}
