package outbox

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// EventDigestCreated records a digest written for a (form, route, period): its data holds
// the form, the route, the period and the number of submissions listed, never their
// content.
const EventDigestCreated = "digest.created"

// DigestItem is an accepted submission a digest lists.
type DigestItem struct {
	ID        uuid.UUID
	CreatedAt time.Time
	Data      Fields
	Test      bool
}

// Digest is one (form, route, period) digest: the submissions it lists and the event
// that records it. Its deliveries belong to Items[0] (docs/design.md, "Digests").
type Digest struct {
	Form        string
	Route       string
	PeriodStart time.Time
	PeriodEnd   time.Time
	Items       []uuid.UUID // at least one
	CreatedAt   time.Time
	Event       Event // digest.created, written in the same transaction
}

// DigestStore is the store side of digests (docs/design.md, "Digests"). A digest is
// unique per (form, route, period start) and a submission is listed at most once per
// (form, route): both are unique keys of the database, so closers racing in several
// processes, or a restart, still make exactly one digest per period and list each
// submission once.
type DigestStore interface {
	// DigestRouteSince records that (form, route) is a digest route from since on, unless
	// it was recorded before, and returns the recorded time: a route's first digest
	// starts there, not with the form's whole history.
	DigestRouteSince(ctx context.Context, form, route string, since time.Time) (time.Time, error)
	// UndigestedSubmissions returns the accepted submissions of form created in
	// [from, until) that no digest of (form, route) lists yet, oldest first.
	UndigestedSubmissions(ctx context.Context, form, route string, from, until time.Time) ([]DigestItem, error)
	// DigestPeriods returns the period starts in [from, until) that have a digest of
	// (form, route), in order.
	DigestPeriods(ctx context.Context, form, route string, from, until time.Time) ([]time.Time, error)
	// CreateDigest writes d (its row, one item per listed submission, its event) and
	// deliveries in one transaction, each delivery's SubmissionID being d.Items[0]. If the
	// period already has a digest, or another digest of the route lists one of d.Items,
	// it writes nothing and returns false.
	CreateDigest(ctx context.Context, d Digest, deliveries []Delivery) (bool, error)
}

// PlannedDeliveries fills in what the stores fill in for a digest's deliveries: each
// belongs to d.Items[0], is pending unless told otherwise, and is due at d.CreatedAt.
// storeflow.CreateDigest calls it, as the stores call PlannedDelivery for Accept.
func (d Digest) PlannedDeliveries(deliveries []Delivery) []Delivery {
	anchor := &Submission{ID: d.Items[0], Status: SubmissionAccepted}
	out := make([]Delivery, len(deliveries))
	for i, del := range deliveries {
		out[i] = PlannedDelivery(anchor, del, d.CreatedAt)
	}
	return out
}
