package outbox

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

// ErrNotParked means the destination is not parked (any more), or the delivery is its
// probe: the caller sends the delivery instead of holding it.
var ErrNotParked = errors.New("outbox: destination is not parked")

// ParkedDestination is a parked destination as the store keeps it (docs/design.md,
// "Parked destinations").
type ParkedDestination struct {
	Key     string
	Channel Channel
	Label   string
	// Reason says why it was parked: the error class and code of the failure that parked
	// it, or "manual". Never visitor data.
	Reason   string
	Manual   bool // parked by an operator: never probed, only unparked by hand
	ParkedAt time.Time
	// ProbeAt is when the next probe may start (zero for a manual park); ProbeInterval is
	// the wait that set it, doubled after each failed probe up to the policy's maximum.
	ProbeAt       time.Time
	ProbeInterval time.Duration
	// ProbeID is the delivery last made due as the probe (uuid.Nil: none yet).
	ProbeID uuid.UUID
	// Held counts the parked deliveries, Leads their distinct submissions (filled by
	// ListParkedDestinations).
	Held  int
	Leads int
}

// Park is one request to park a destination.
type Park struct {
	Destination Destination
	Reason      string
	Manual      bool
	// By names who parked it, for its destination.parked event: "worker" or the
	// operator.
	By  string
	Now time.Time
	// ProbeAt and ProbeInterval start the probe schedule (ignored for a manual park).
	ProbeAt       time.Time
	ProbeInterval time.Duration
}

// Hold parks one leased delivery of a parked destination, fenced by its lease token.
type Hold struct {
	DeliveryID uuid.UUID
	LeaseToken string
	Key        string
	Now        time.Time
	// Attempt, when set, is the failed try that parked the destination or a failed probe:
	// it is recorded in the history, with LastError. Either way the attempt the claim
	// charged is given back: a held delivery spends none of its budget.
	Attempt   *Attempt
	LastError string
	// ProbeMax caps the wait before the next probe after a failed one (the delivery is
	// the destination's probe): twice the last wait, at most ProbeMax (0: no cap).
	ProbeMax time.Duration
}

// DestinationStore is the part of Store that keeps parked destinations, so that parking
// holds across instances (PostgreSQL) and restarts.
type DestinationStore interface {
	// ParkDestination parks p.Destination, with a destination.parked event. It reports
	// whether it was not parked before; parking a parked destination changes nothing (and
	// writes no event), except that a manual park makes an automatic one manual (no more
	// probes).
	ParkDestination(ctx context.Context, p Park) (bool, error)
	// HoldDelivery sets a leased delivery to parked (attempts given back, lease cleared,
	// parked under h.Key) while h.Key is parked. ErrNotParked when it is not, or when
	// the delivery is the destination's probe and h.Attempt is nil (a claimed probe is
	// sent, not held); ErrLeaseLost when the lease is gone.
	HoldDelivery(ctx context.Context, h Hold) error
	// StartProbe makes the oldest parked delivery of key due at now as the destination's
	// probe, if its probe is due (ProbeAt <= now, not manual), and moves ProbeAt to
	// now + the larger of guard and the probe interval, so that no other instance starts
	// one while it is under way (a probe lost with its instance is replaced then). With
	// nothing held to probe it moves ProbeAt an interval ahead and starts none. It returns the probe's
	// id, or uuid.Nil when no probe was started.
	StartProbe(ctx context.Context, key string, now time.Time, guard time.Duration) (uuid.UUID, error)
	// UnparkDestination unparks key and makes every delivery parked under it pending,
	// due a microsecond apart in the order they were created, the last at now (so that
	// the next claim, which orders by due time, takes them all in that order). With probe set, it unparks only if
	// probe is the destination's probe and the park is not manual (a probe that got
	// through). It writes a destination.unparked event naming by ("probe" or the
	// operator). It returns how many deliveries resumed; ErrNotParked when nothing was
	// unparked.
	UnparkDestination(ctx context.Context, key string, probe uuid.UUID, by string, now time.Time) (int, error)
	// ListParkedDestinations returns the parked destinations, oldest park first, with
	// their held deliveries and leads counted.
	ListParkedDestinations(ctx context.Context) ([]ParkedDestination, error)
}
