package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// When a batched write (AcceptBatch, CompleteBatch) cannot run as one statement, it
// pipelines its statement once per item in one transaction. A statement that fails
// aborts the transaction, so an item whose own row is bad is set aside and the
// transaction rerun without it; this is cheaper than a savepoint per item in the common
// case where nothing fails.

// isolate runs run over the live item indexes until it succeeds. run returns the position
// in live of an item whose own row failed, or -1 when the transaction failed as a whole.
// Such an item gets own(i, err) and the rest are rerun; a deadlock or serialization
// failure reruns everything (a few times); any other failure gives every live item
// whole(i, err).
func isolate(live []int, run func(live []int) (int, error), own, whole func(i int, err error)) {
	for retries := 0; len(live) > 0; {
		bad, err := run(live)
		switch {
		case err == nil:
			return
		case bad >= 0:
			own(live[bad], err)
			live = append(live[:bad:bad], live[bad+1:]...)
		case retryable(err) && retries < 3:
			retries++
		default:
			for _, i := range live {
				whole(i, err)
			}
			return
		}
	}
}

// pipeline sends query once per live item in one round trip and hands each item's single
// result row to scan (which sees pgx.ErrNoRows when the statement returned nothing). The
// first error scan returns stops the reading; its position in live comes back when it is
// a row error (else -1).
func pipeline(ctx context.Context, tx batchSender, query string, live []int, args func(i int) []any, scan func(i int, row pgx.Row) error) (int, error) {
	b := &pgx.Batch{}
	for _, i := range live {
		b.Queue(query, args(i)...)
	}
	br := tx.SendBatch(ctx, b)
	for k, i := range live {
		if err := scan(i, br.QueryRow()); err != nil {
			br.Close()
			if rowError(err) {
				return k, err
			}
			return -1, err
		}
	}
	return -1, br.Close()
}

// batchSender is a transaction or the pool (each statement its own transaction).
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// rowError tells an error caused by one row's data (a data exception such as a NUL byte
// in text, or a constraint violation) from a failure of the transaction or connection.
func rowError(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) < 2 {
		return false
	}
	switch pe.Code[:2] {
	case "22", "23":
		return true
	}
	return false
}

// retryable is a deadlock or serialization failure: rerunning the same transaction is
// expected to succeed.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}
