package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// The lead ledger (docs/operations.md, "Lead ledger"; docs/design.md, "The lead
// ledger") counts, per form and UTC day, what intake answered and what the store holds,
// so that an operator can see that nothing was lost between the two.
//
// What only intake knows (a post was answered success, a post went to the spool, the
// replayer stored a spooled post) is counted in memory per instance (LedgerCounter) and
// flushed now and then into ledger_counts, keyed by instance, form and day: intake's hot
// path gains no write. Everything else is read from the rows themselves.

// LedgerCount is one instance's intake counters of one form and UTC day, or (from
// LedgerStore.LedgerCounts) their sum over every instance.
type LedgerCount struct {
	Day  time.Time // the UTC day's midnight
	Form string
	// Answered counts new posts answered success (200 or 303: stored or queued); a
	// duplicate answered with its first post's id is not one.
	Answered int64
	// Spooled counts the answered posts the spool took because the store did not (the
	// answer said queued).
	Spooled int64
	// Replayed counts spooled posts the replayer stored (not those it found stored).
	Replayed int64
}

// LedgerStatusCount counts one form's stored submissions of one status created on a day.
type LedgerStatusCount struct {
	Day    time.Time
	Form   string
	Status SubmissionStatus
	Count  int64
}

// LedgerDeliveryCount counts the deliveries of one form's route in one status, by the
// day their submission was created.
type LedgerDeliveryCount struct {
	Day    time.Time
	Form   string
	Route  string
	Status DeliveryStatus
	Count  int64
}

// LedgerFormDay counts something per form and day (erased submissions, accepted ones
// without a delivery).
type LedgerFormDay struct {
	Day   time.Time
	Form  string
	Count int64
}

// LedgerRows is what the rows say about the days of a ledger. Test submissions
// (Submission.Test, the canary's) are left out of every count.
type LedgerRows struct {
	Submissions []LedgerStatusCount
	Deliveries  []LedgerDeliveryCount
	// Undelivered counts accepted submissions whose reason is not no_route_matched and
	// that have no delivery but autoreplies: whether that is a loss depends on the form's
	// routes, which the store does not know (LedgerQuery.Checked decides).
	Undelivered []LedgerFormDay
	// Erased counts erased submissions by the day they were created (read from their
	// submission.erased events: the id is a UUIDv7, which carries that time).
	Erased []LedgerFormDay
}

// LedgerStore keeps the ledger's counters and reads its rows.
type LedgerStore interface {
	// RecordLedger writes instance's counters. The counts are cumulative (an instance
	// never lowers one) and the store keeps the greatest value it was given, so a flush
	// retried after an unclear failure never counts anything twice.
	RecordLedger(ctx context.Context, instance string, counts []LedgerCount, now time.Time) error
	// LedgerCounts sums the counters of every instance per form and day, for the days
	// in [from, until).
	LedgerCounts(ctx context.Context, from, until time.Time) ([]LedgerCount, error)
	// LedgerRows counts the non-test rows of the submissions created in [from, until),
	// per UTC day. It reads the range of the created_at index and, for deliveries, the
	// (submission_id, ...) unique index: a day of N submissions costs about N index
	// entries and heap rows, plus one index probe per submission for the deliveries.
	LedgerRows(ctx context.Context, from, until time.Time) (LedgerRows, error)
	// PruneLedger deletes the counts of the days before the UTC day before (retention:
	// a few rows per form, day and instance).
	PruneLedger(ctx context.Context, before time.Time) error
}

// UTCDay is the UTC day of t (its midnight).
func UTCDay(t time.Time) time.Time {
	return t.UTC().Truncate(24 * time.Hour)
}

// LedgerErasedDay is the day and form of an erased submission, from its
// submission.erased event: the day its UUIDv7 id was made (intake makes it with the
// submission's created_at, model.go), or the erasure's own day for an id of another
// version. A wrong day can only add to a day's erasures, which excuses rows, never flags
// one.
func LedgerErasedDay(id uuid.UUID, data []byte, at time.Time) (time.Time, string, error) {
	var ev struct {
		Form string `json:"form"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return time.Time{}, "", fmt.Errorf("erasure event of %s: %w", id, err)
	}
	if id.Version() == 7 {
		sec, nsec := id.Time().UnixTime()
		return UTCDay(time.Unix(sec, nsec)), ev.Form, nil
	}
	return UTCDay(at), ev.Form, nil
}

// LedgerDayNumber is the UTC day with the given number of days since the epoch (the
// stores' queries group by it).
func LedgerDayNumber(n int64) time.Time { return time.Unix(n*86400, 0).UTC() }
