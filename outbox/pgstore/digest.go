package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

var (
	qDigestRouteSince      = queries.Must("DigestRouteSince")
	qUndigestedSubmissions = queries.Must("UndigestedSubmissions")
	qDigestPeriods         = queries.Must("DigestPeriods")
	qInsertDigest          = queries.Must("InsertDigest")
	qInsertDigestItems     = queries.Must("InsertDigestItems")
	qInsertDigestDelivery  = queries.Must("InsertDigestDelivery")

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

// CreateDigest implements outbox.DigestStore; storeflow.CreateDigest runs its steps
// over the flowTx methods below.
func (s *Store) CreateDigest(ctx context.Context, d outbox.Digest, deliveries []outbox.Delivery) (bool, error) {
	return storeflow.CreateDigest(ctx, flow{s}, d, deliveries)
}

// InsertDigest: under READ COMMITTED, an insert that meets a key another transaction is
// inserting waits for it, then skips the row if it committed; the skipped row is the
// conflict. InsertDigestItems skips a listed submission the same way.
func (t flowTx) InsertDigest(ctx context.Context, d outbox.Digest) (bool, error) {
	tag, err := t.tx.Exec(ctx, qInsertDigest, d.Form, d.Route, d.PeriodStart, d.PeriodEnd, len(d.Items), d.Items[0], d.CreatedAt)
	return tag.RowsAffected() > 0, err
}

// InsertDigestItems lists all of d.Items in one statement.
func (t flowTx) InsertDigestItems(ctx context.Context, d outbox.Digest) (int, error) {
	tag, err := t.tx.Exec(ctx, qInsertDigestItems, d.Form, d.Route, d.Items, d.PeriodStart)
	return int(tag.RowsAffected()), err
}

func (t flowTx) InsertDelivery(ctx context.Context, del outbox.Delivery) error {
	payload := string(del.Payload)
	if payload == "" {
		payload = "{}"
	}
	_, err := t.tx.Exec(ctx, qInsertDigestDelivery,
		del.ID, del.SubmissionID, del.Route, string(del.Channel), del.Recipient, string(del.Status),
		del.Attempts, del.MaxAttempts, del.NextAttemptAt, del.LeaseOwner, del.LeaseToken,
		nullTime(del.LockedUntil), del.LastError, del.Provider, del.ProviderMessageID, payload,
		del.CreatedAt, del.UpdatedAt, nullTime(del.SentAt))
	return err
}

// nullTime is NULL for the zero time (not leased, not sent).
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
