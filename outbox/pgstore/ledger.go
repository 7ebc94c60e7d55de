package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var (
	qRecordLedger      = queries.Must("RecordLedger")
	qLedgerCounts      = queries.Must("LedgerCounts")
	qLedgerSubmissions = queries.Must("LedgerSubmissions")
	qLedgerDeliveries  = queries.Must("LedgerDeliveries")
	qLedgerUndelivered = queries.Must("LedgerUndelivered")
	qLedgerErased      = queries.Must("LedgerErased")
	qPruneLedger       = queries.Must("PruneLedger")

	_ outbox.LedgerStore = (*Store)(nil)
)

// RecordLedger implements outbox.LedgerStore: one transaction, the rows in the caller's
// order (outbox.LedgerCounter sorts them, so concurrent flushes lock in one order).
func (s *Store) RecordLedger(ctx context.Context, instance string, counts []outbox.LedgerCount, now time.Time) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, c := range counts {
			b.Queue(qRecordLedger, c.Day.UTC(), c.Form, instance, c.Answered, c.Spooled, c.Replayed, now)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("record ledger: %w", err)
	}
	return nil
}

// LedgerCounts implements outbox.LedgerStore.
func (s *Store) LedgerCounts(ctx context.Context, from, until time.Time) ([]outbox.LedgerCount, error) {
	rows, err := s.pool.Query(ctx, qLedgerCounts, from.UTC(), until.UTC())
	if err != nil {
		return nil, fmt.Errorf("ledger counts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.LedgerCount, error) {
		var c outbox.LedgerCount
		err := r.Scan(&c.Day, &c.Form, &c.Answered, &c.Spooled, &c.Replayed)
		c.Day = outbox.UTCDay(c.Day)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger counts: %w", err)
	}
	return out, nil
}

// LedgerRows implements outbox.LedgerStore.
func (s *Store) LedgerRows(ctx context.Context, from, until time.Time) (outbox.LedgerRows, error) {
	var out outbox.LedgerRows
	var err error
	out.Submissions, err = ledgerQuery(ctx, s, qLedgerSubmissions, from, until, func(r pgx.CollectableRow) (outbox.LedgerStatusCount, error) {
		var c outbox.LedgerStatusCount
		err := r.Scan(&c.Day, &c.Form, &c.Status, &c.Count)
		c.Day = outbox.UTCDay(c.Day)
		return c, err
	})
	if err != nil {
		return out, err
	}
	out.Deliveries, err = ledgerQuery(ctx, s, qLedgerDeliveries, from, until, func(r pgx.CollectableRow) (outbox.LedgerDeliveryCount, error) {
		var c outbox.LedgerDeliveryCount
		err := r.Scan(&c.Day, &c.Form, &c.Route, &c.Status, &c.Count)
		c.Day = outbox.UTCDay(c.Day)
		return c, err
	})
	if err != nil {
		return out, err
	}
	out.Undelivered, err = ledgerQuery(ctx, s, qLedgerUndelivered, from, until, func(r pgx.CollectableRow) (outbox.LedgerFormDay, error) {
		var c outbox.LedgerFormDay
		err := r.Scan(&c.Day, &c.Form, &c.Count)
		c.Day = outbox.UTCDay(c.Day)
		return c, err
	})
	if err != nil {
		return out, err
	}
	rows, err := s.pool.Query(ctx, qLedgerErased, from.UTC())
	if err != nil {
		return out, fmt.Errorf("ledger erasures: %w", err)
	}
	out.Erased, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.LedgerFormDay, error) {
		var (
			id   uuid.UUID
			data []byte
			at   time.Time
		)
		if err := r.Scan(&id, &data, &at); err != nil {
			return outbox.LedgerFormDay{}, err
		}
		day, form, err := outbox.LedgerErasedDay(id, data, at)
		return outbox.LedgerFormDay{Day: day, Form: form, Count: 1}, err
	})
	if err != nil {
		return out, fmt.Errorf("ledger erasures: %w", err)
	}
	return out, nil
}

// ledgerQuery runs one of the ledger's grouped reads over [from, until).
func ledgerQuery[T any](ctx context.Context, s *Store, sql string, from, until time.Time, scan pgx.RowToFunc[T]) ([]T, error) {
	rows, err := s.pool.Query(ctx, sql, from.UTC(), until.UTC())
	if err != nil {
		return nil, fmt.Errorf("ledger rows: %w", err)
	}
	out, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("ledger rows: %w", err)
	}
	return out, nil
}

// PruneLedger implements outbox.LedgerStore.
func (s *Store) PruneLedger(ctx context.Context, before time.Time) error {
	if _, err := s.pool.Exec(ctx, qPruneLedger, outbox.UTCDay(before)); err != nil {
		return fmt.Errorf("prune ledger: %w", err)
	}
	return nil
}
