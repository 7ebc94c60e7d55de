package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Errors of the operator's side of the store.
var (
	// ErrNotReleasable means a release was asked for a submission that is not held back
	// (quarantined or spam).
	ErrNotReleasable = errors.New("outbox: submission is not quarantined or spam")
	// ErrBadCursor means a list cursor was not one this package made.
	ErrBadCursor = errors.New("outbox: malformed cursor")
)

// Event kinds written by operator actions.
const (
	EventSubmissionReleased = "submission.released"
	// EventSubmissionErased records an erasure request: the id and form only, never data.
	EventSubmissionErased = "submission.erased"
)

// Ops is the part of Store that operators and housekeeping use: looking submissions up,
// releasing and erasing them, health numbers and retention (the Pruner needs only this).
type Ops interface {
	// ListSubmissions returns submissions matching f, newest first (created_at, then id,
	// descending), at most f.Limit of them, and the cursor of the next page ("" when this
	// page is the last).
	ListSubmissions(ctx context.Context, f SubmissionFilter) ([]Submission, string, error)
	// ListDeliveriesByStatus returns deliveries in f.Status (every status when empty),
	// latest next_attempt_at first (for dead deliveries: most recently given up first; the
	// status index serves this order), and the next page's cursor.
	ListDeliveriesByStatus(ctx context.Context, f DeliveryFilter) ([]Delivery, string, error)
	// ReleaseSubmission turns a quarantined or spam submission into an accepted one and
	// its skipped deliveries into pending ones, due at now with a fresh attempt budget,
	// recording a submission.released event. ErrNotFound, ErrNotReleasable.
	ReleaseSubmission(ctx context.Context, id uuid.UUID, now time.Time) error
	// DeleteSubmission erases a submission with its deliveries and their attempts (an
	// erasure request) and records a submission.erased event holding no visitor data.
	// A store that keeps files (SQLite) then removes the erased bytes from them too; an
	// error after the rows were deleted says that they were. ErrNotFound.
	DeleteSubmission(ctx context.Context, id uuid.UUID, now time.Time) error
	// Stats counts what health checks and gauges report. It reads only the partial
	// indexes of live work and the status index, never the sent history.
	Stats(ctx context.Context, now time.Time) (Stats, error)
	// Prune deletes at most batch submissions created before `before` whose deliveries
	// are all terminal (sent, dead or skipped), then at most batch events older than
	// `before`, in one short transaction. It returns how many submissions and events it
	// deleted; callers repeat until both come back below batch.
	Prune(ctx context.Context, before time.Time, batch int) (PruneResult, error)
	// LockPruner takes the cluster-wide pruner lock without waiting. ok is false when
	// another instance holds it; otherwise unlock must be called when the run ends.
	LockPruner(ctx context.Context) (unlock func(), ok bool, err error)
}

// SubmissionFilter selects submissions. Zero fields do not filter.
type SubmissionFilter struct {
	Form   string
	Status SubmissionStatus
	Since  time.Time // created_at >= Since
	Until  time.Time // created_at < Until
	Limit  int       // default and cap: MaxListLimit
	Cursor string    // from the previous page
}

// DeliveryFilter selects deliveries by status.
type DeliveryFilter struct {
	Status DeliveryStatus
	Limit  int
	Cursor string
}

// Stats are the live numbers of the outbox.
type Stats struct {
	// Backlog counts deliveries still to be sent: pending, failed (retry scheduled) and
	// sending.
	Backlog int64
	// Due counts pending and failed deliveries whose time has come.
	Due int64
	// OldestDueAt is the next_attempt_at of the oldest due delivery; zero when none is due.
	OldestDueAt time.Time
	// Dead counts deliveries given up on, waiting for an operator.
	Dead int64
}

// OldestDueAge is how long the oldest due delivery has been waiting at now (0 if none).
func (s Stats) OldestDueAge(now time.Time) time.Duration {
	if s.OldestDueAt.IsZero() || now.Before(s.OldestDueAt) {
		return 0
	}
	return now.Sub(s.OldestDueAt)
}

// PruneResult is what one Prune batch deleted.
type PruneResult struct {
	Submissions int
	Events      int
}

// MaxListLimit caps one page of a list.
const MaxListLimit = 1000

// DefaultListLimit is a page when no limit is asked for.
const DefaultListLimit = 50

// PageLimit applies the default and the cap to a requested page size.
func PageLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultListLimit
	case n > MaxListLimit:
		return MaxListLimit
	}
	return n
}

// Cursor is a keyset position: the sort time and id of the last row of a page. It is
// opaque to clients ("<unix micros>.<uuid>").
type Cursor struct {
	At time.Time
	ID uuid.UUID
}

// String encodes the cursor.
func (c Cursor) String() string {
	return strconv.FormatInt(c.At.UnixMicro(), 10) + "." + c.ID.String()
}

// ParseCursor decodes a cursor; "" is the zero Cursor (first page).
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	at, id, ok := strings.Cut(s, ".")
	if !ok {
		return Cursor{}, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	us, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return Cursor{}, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return Cursor{}, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	return Cursor{At: time.UnixMicro(us).UTC(), ID: u}, nil
}

// IsZero reports whether this is the first page's cursor.
func (c Cursor) IsZero() bool { return c.ID == uuid.Nil }

// exportPage is the page size of an export: small enough that a page of large
// submissions stays a few MB, large enough that the per-query cost is amortised.
const exportPage = 200

// ExportSubmissions calls fn for every submission matching f (f.Limit and f.Cursor are
// ignored), newest first, reading one page at a time: memory stays bounded by a page
// however many rows match, and no transaction is held while fn writes to a slow client.
func ExportSubmissions(ctx context.Context, ops Ops, f SubmissionFilter, fn func(*Submission) error) error {
	f.Limit, f.Cursor = exportPage, ""
	files, _ := ops.(FileStore) // every Store is one; each exported submission carries its files' metadata
	for {
		page, next, err := ops.ListSubmissions(ctx, f)
		if err != nil {
			return fmt.Errorf("export submissions: %w", err)
		}
		for i := range page {
			if files != nil {
				if page[i].Files, err = files.SubmissionFiles(ctx, page[i].ID); err != nil {
					return fmt.Errorf("export submissions: %w", err)
				}
			}
			if err := fn(&page[i]); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		f.Cursor = next
	}
}

// TrimPage cuts a query result fetched with limit+1 rows down to limit and returns the
// cursor of the next page ("" when the extra row was not there: this is the last page).
func TrimPage[T any](rows []T, limit int, key func(T) Cursor) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, key(rows[limit-1]).String()
}

// SubmissionCursor is a submission's position in the newest-first order.
func SubmissionCursor(s Submission) Cursor { return Cursor{At: s.CreatedAt, ID: s.ID} }

// DeliveryCursor is a delivery's position in the latest-due-first order.
func DeliveryCursor(d Delivery) Cursor { return Cursor{At: d.NextAttemptAt, ID: d.ID} }
