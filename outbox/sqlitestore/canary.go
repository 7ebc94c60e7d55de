package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var (
	qInsertCanaryRun                       = queries.Must("InsertCanaryRun")
	qLastCanaryRun                         = queries.Must("LastCanaryRun")
	qUpsertCanaryResult                    = queries.Must("UpsertCanaryResult")
	qCanaryResults                         = queries.Must("CanaryResults")
	_                   outbox.CanaryStore = (*Store)(nil)
)

// RecordCanaryRun implements outbox.CanaryStore.
func (s *Store) RecordCanaryRun(ctx context.Context, run outbox.CanaryRun) (bool, error) {
	n, err := s.changedRows(ctx, qInsertCanaryRun, run.Form, micros(run.PeriodStart), run.SubmissionID.String(), micros(run.CreatedAt))
	if err != nil {
		return false, fmt.Errorf("record canary run %s: %w", run.Form, err)
	}
	return n > 0, nil
}

// LastCanaryRun implements outbox.CanaryStore.
func (s *Store) LastCanaryRun(ctx context.Context, form string) (outbox.CanaryRun, error) {
	var (
		run            outbox.CanaryRun
		start, created int64
		id             string
	)
	err := s.r.QueryRowContext(ctx, qLastCanaryRun, form).Scan(&run.Form, &start, &id, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return run, outbox.ErrNotFound
	}
	if err == nil {
		run.SubmissionID, err = uuid.Parse(id)
	}
	if err != nil {
		return run, fmt.Errorf("last canary run %s: %w", form, err)
	}
	run.PeriodStart, run.CreatedAt = fromMicros(start), fromMicros(created)
	return run, nil
}

// RecordCanaryResult implements outbox.CanaryStore.
func (s *Store) RecordCanaryResult(ctx context.Context, r outbox.CanaryResult) (bool, error) {
	since := sql.NullInt64{Int64: micros(r.At), Valid: !r.Passed}
	n, err := s.changedRows(ctx, qUpsertCanaryResult, r.Form, r.Route, string(r.Channel), micros(r.PeriodStart),
		r.SubmissionID.String(), r.Passed, r.Error, micros(r.At), since)
	if err != nil {
		return false, fmt.Errorf("record canary result %s/%s: %w", r.Form, r.Route, err)
	}
	return n > 0, nil
}

// changedRows runs one write statement in the shared write transaction and says how
// many rows it changed.
func (s *Store) changedRows(ctx context.Context, q string, args ...any) (int64, error) {
	var n int64
	err := s.writeTx(ctx, func(tx *txStmts) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// CanaryResults implements outbox.CanaryStore.
func (s *Store) CanaryResults(ctx context.Context) ([]outbox.CanaryResult, error) {
	rows, err := s.r.QueryContext(ctx, qCanaryResults)
	if err != nil {
		return nil, fmt.Errorf("canary results: %w", err)
	}
	defer rows.Close()
	var out []outbox.CanaryResult
	for rows.Next() {
		var (
			r         outbox.CanaryResult
			channel   string
			id        string
			start, at int64
			since     sql.NullInt64
		)
		if err := rows.Scan(&r.Form, &r.Route, &channel, &start, &id, &r.Passed, &r.Error, &at, &since); err != nil {
			return nil, fmt.Errorf("canary results: %w", err)
		}
		if r.SubmissionID, err = uuid.Parse(id); err != nil {
			return nil, fmt.Errorf("canary results: submission id: %w", err)
		}
		r.Channel, r.PeriodStart, r.At = outbox.Channel(channel), fromMicros(start), fromMicros(at)
		if since.Valid {
			r.FailingSince = fromMicros(since.Int64)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("canary results: %w", err)
	}
	return out, nil
}
