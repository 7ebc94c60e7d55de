package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var (
	qInsertCanaryRun    = queries.Must("InsertCanaryRun")
	qLastCanaryRun      = queries.Must("LastCanaryRun")
	qUpsertCanaryResult = queries.Must("UpsertCanaryResult")
	qCanaryResults      = queries.Must("CanaryResults")

	_ outbox.CanaryStore = (*Store)(nil)
)

// RecordCanaryRun implements outbox.CanaryStore. A concurrent insert of the same
// (form, period start) waits for the other transaction, then inserts nothing if it
// committed.
func (s *Store) RecordCanaryRun(ctx context.Context, run outbox.CanaryRun) (bool, error) {
	tag, err := s.pool.Exec(ctx, qInsertCanaryRun, run.Form, run.PeriodStart, run.SubmissionID, run.CreatedAt)
	if err != nil {
		return false, fmt.Errorf("record canary run %s: %w", run.Form, err)
	}
	return tag.RowsAffected() > 0, nil
}

// LastCanaryRun implements outbox.CanaryStore.
func (s *Store) LastCanaryRun(ctx context.Context, form string) (outbox.CanaryRun, error) {
	var run outbox.CanaryRun
	err := s.pool.QueryRow(ctx, qLastCanaryRun, form).Scan(&run.Form, &run.PeriodStart, &run.SubmissionID, &run.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return run, outbox.ErrNotFound
	}
	if err != nil {
		return run, fmt.Errorf("last canary run %s: %w", form, err)
	}
	run.PeriodStart, run.CreatedAt = run.PeriodStart.UTC(), run.CreatedAt.UTC()
	return run, nil
}

// RecordCanaryResult implements outbox.CanaryStore.
func (s *Store) RecordCanaryResult(ctx context.Context, r outbox.CanaryResult) (bool, error) {
	var since *time.Time
	if !r.Passed {
		since = &r.At
	}
	tag, err := s.pool.Exec(ctx, qUpsertCanaryResult, r.Form, r.Route, string(r.Channel), r.PeriodStart,
		r.SubmissionID, r.Passed, r.Error, r.At, since)
	if err != nil {
		return false, fmt.Errorf("record canary result %s/%s: %w", r.Form, r.Route, err)
	}
	return tag.RowsAffected() > 0, nil
}

// CanaryResults implements outbox.CanaryStore.
func (s *Store) CanaryResults(ctx context.Context) ([]outbox.CanaryResult, error) {
	rows, err := s.pool.Query(ctx, qCanaryResults)
	if err != nil {
		return nil, fmt.Errorf("canary results: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (outbox.CanaryResult, error) {
		var (
			r       outbox.CanaryResult
			channel string
			since   *time.Time
		)
		err := row.Scan(&r.Form, &r.Route, &channel, &r.PeriodStart, &r.SubmissionID, &r.Passed, &r.Error, &r.At, &since)
		r.Channel, r.PeriodStart, r.At = outbox.Channel(channel), r.PeriodStart.UTC(), r.At.UTC()
		if since != nil {
			r.FailingSince = since.UTC()
		}
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("canary results: %w", err)
	}
	return out, nil
}
