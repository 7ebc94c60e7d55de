package outbox

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// MaxCanaryError bounds a canary result's error text, as attempts bound theirs.
const MaxCanaryError = 500

// CanaryRun is one canary of a form: the synthetic test submission written for one
// period (docs/design.md, "Canary").
type CanaryRun struct {
	Form         string
	PeriodStart  time.Time
	SubmissionID uuid.UUID
	CreatedAt    time.Time
}

// CanaryResult is the verdict on one route of one canary run: passed when every delivery
// of the route was sent; failed when one went dead, or was not sent within the deadline.
type CanaryResult struct {
	Form         string
	Route        string
	Channel      Channel
	PeriodStart  time.Time // the run judged
	SubmissionID uuid.UUID
	Passed       bool
	// Error says why a route failed (the dead delivery's last error, or the deadline
	// missed), at most MaxCanaryError bytes; "" when it passed.
	Error string
	At    time.Time // when the verdict was reached
	// FailingSince is when the route's canaries began to fail: the At of the first of
	// the failed verdicts in a row, kept by the store (RecordCanaryResult ignores the
	// caller's); zero when it passed.
	FailingSince time.Time
}

// CanaryStore is the store side of the canary (docs/design.md, "Canary"). A run is
// unique per (form, period start) and a route keeps only its latest run's verdict, the
// first one reached: both are decided by the database's keys, so schedulers in several
// processes, or a restart, record each run and each verdict once.
type CanaryStore interface {
	// RecordCanaryRun records run unless (run.Form, run.PeriodStart) has a run already;
	// false then, and nothing written.
	RecordCanaryRun(ctx context.Context, run CanaryRun) (bool, error)
	// LastCanaryRun returns the form's run with the latest period start, ErrNotFound
	// when the form has none.
	LastCanaryRun(ctx context.Context, form string) (CanaryRun, error)
	// RecordCanaryResult stores r as (r.Form, r.Route)'s last result, unless the stored
	// one is of the same run or a later one; false then, and nothing written.
	RecordCanaryResult(ctx context.Context, r CanaryResult) (bool, error)
	// CanaryResults returns every route's last result, ordered by form and route.
	CanaryResults(ctx context.Context) ([]CanaryResult, error)
}
