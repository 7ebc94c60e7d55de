package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"

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

// RecordLedger implements outbox.LedgerStore in the shared write transaction: a flush is
// a handful of rows every few seconds.
func (s *Store) RecordLedger(ctx context.Context, instance string, counts []outbox.LedgerCount, now time.Time) error {
	err := s.writeTx(ctx, func(tx *txStmts) error {
		for _, c := range counts {
			if _, err := tx.ExecContext(ctx, qRecordLedger, micros(c.Day), c.Form, instance,
				c.Answered, c.Spooled, c.Replayed, micros(now)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record ledger: %w", err)
	}
	return nil
}

// LedgerCounts implements outbox.LedgerStore.
func (s *Store) LedgerCounts(ctx context.Context, from, until time.Time) ([]outbox.LedgerCount, error) {
	out, err := ledgerQuery(ctx, s, qLedgerCounts, micros(from), micros(until), func(rows *sql.Rows) (outbox.LedgerCount, error) {
		var (
			c   outbox.LedgerCount
			day int64
		)
		err := rows.Scan(&day, &c.Form, &c.Answered, &c.Spooled, &c.Replayed)
		c.Day = fromMicros(day)
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
	f, u := micros(from), micros(until)
	out.Submissions, err = ledgerQuery(ctx, s, qLedgerSubmissions, f, u, func(rows *sql.Rows) (outbox.LedgerStatusCount, error) {
		var (
			c   outbox.LedgerStatusCount
			day int64
		)
		err := rows.Scan(&day, &c.Form, &c.Status, &c.Count)
		c.Day = outbox.LedgerDayNumber(day)
		return c, err
	})
	if err != nil {
		return out, fmt.Errorf("ledger rows: %w", err)
	}
	out.Deliveries, err = ledgerQuery(ctx, s, qLedgerDeliveries, f, u, func(rows *sql.Rows) (outbox.LedgerDeliveryCount, error) {
		var (
			c   outbox.LedgerDeliveryCount
			day int64
		)
		err := rows.Scan(&day, &c.Form, &c.Route, &c.Status, &c.Count)
		c.Day = outbox.LedgerDayNumber(day)
		return c, err
	})
	if err != nil {
		return out, fmt.Errorf("ledger rows: %w", err)
	}
	out.Undelivered, err = ledgerQuery(ctx, s, qLedgerUndelivered, f, u, func(rows *sql.Rows) (outbox.LedgerFormDay, error) {
		var (
			c   outbox.LedgerFormDay
			day int64
		)
		err := rows.Scan(&day, &c.Form, &c.Count)
		c.Day = outbox.LedgerDayNumber(day)
		return c, err
	})
	if err != nil {
		return out, fmt.Errorf("ledger rows: %w", err)
	}
	out.Erased, err = ledgerQuery(ctx, s, qLedgerErased, f, nil, func(rows *sql.Rows) (outbox.LedgerFormDay, error) {
		var (
			id   sql.NullString
			data string
			at   int64
		)
		if err := rows.Scan(&id, &data, &at); err != nil {
			return outbox.LedgerFormDay{}, err
		}
		sid, err := uuid.Parse(id.String)
		if err != nil {
			return outbox.LedgerFormDay{}, fmt.Errorf("erasure event: %w", err)
		}
		day, form, err := outbox.LedgerErasedDay(sid, []byte(data), fromMicros(at))
		return outbox.LedgerFormDay{Day: day, Form: form, Count: 1}, err
	})
	if err != nil {
		return out, fmt.Errorf("ledger erasures: %w", err)
	}
	return out, nil
}

// ledgerQuery runs one of the ledger's reads with args (a nil one is left out) and scans
// every row.
func ledgerQuery[T any](ctx context.Context, s *Store, query string, from, until any, scan func(*sql.Rows) (T, error)) ([]T, error) {
	args := []any{from}
	if until != nil {
		args = append(args, until)
	}
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// PruneLedger implements outbox.LedgerStore.
func (s *Store) PruneLedger(ctx context.Context, before time.Time) error {
	err := s.writeTx(ctx, func(tx *txStmts) error {
		_, err := tx.ExecContext(ctx, qPruneLedger, micros(outbox.UTCDay(before)))
		return err
	})
	if err != nil {
		return fmt.Errorf("prune ledger: %w", err)
	}
	return nil
}
