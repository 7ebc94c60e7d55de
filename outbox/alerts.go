package outbox

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// AlertsForm is the reserved form of the system submissions that carry alert notices
// (docs/design.md, "Alerts"): a delivery must belong to a submission, and an alert's
// notices are deliveries like any other (stored, retried, visible with their attempt
// history). Its submissions are flagged test, hold no visitor data, and its dead
// deliveries never raise an alert of their own (AlertStore.DeadDeliveryGroups).
const AlertsForm = "_alerts"

// Alert notices: what one evaluation decided to tell the owner about an alert.
const (
	AlertOpened   = "opened"   // the condition was reported for the first time
	AlertStill    = "still"    // it still holds, one re-notify window later
	AlertResolved = "resolved" // it is no longer reported
	// AlertRefreshed is no notice: the open alert's summary and count changed between
	// notices. It writes no delivery and no event.
	AlertRefreshed = "refreshed"
)

// Event kinds written with each notice, in the notice's transaction.
const (
	EventAlertOpened   = "alert.opened"
	EventAlertStill    = "alert.still"
	EventAlertResolved = "alert.resolved"
)

// Alert is the stored state of one (Kind, Key): open while ResolvedAt is zero. At most
// one alert of a (Kind, Key) is open at a time, across every instance on the store.
type Alert struct {
	ID          uuid.UUID
	Kind        string
	Key         string
	Form        string
	Summary     string
	Affected    int
	Channel     string
	Destination string
	// Instance is the instance whose in-process state raised the alert
	// (AlertCondition.Local), "" for a condition any instance sees; only that instance
	// resolves it.
	Instance   string
	Notices    int // notices decided: opened, then one per "still happening"
	OpenedAt   time.Time
	NotifiedAt time.Time // the last notice
	ResolvedAt time.Time // zero while open
}

// AlertNotice is one decided notice: the alert's new state and the system submission and
// deliveries that tell the owner about it, written in one transaction only if the decision
// still holds in the database.
type AlertNotice struct {
	Notice string // AlertOpened, AlertStill or AlertResolved
	// Alert: for AlertOpened the new row (its ID set); for AlertStill and AlertResolved
	// the ID of the open alert, and the summary and counts to keep.
	Alert Alert
	// NotifiedBefore (AlertStill): the notice is written only if the alert's last notice
	// is not after it, so instances racing on one window decide it once.
	NotifiedBefore time.Time
	Now            time.Time
	// Submission (form AlertsForm) and Deliveries carry the notice; no submission is
	// written when there are no deliveries (no target could take it).
	Submission *Submission
	Deliveries []Delivery
}

// DeadGroup is one (form, route) with dead deliveries not retried yet.
type DeadGroup struct {
	Form        string
	Route       string
	Channel     Channel
	Submissions int       // distinct submissions with a dead delivery of the route
	Since       time.Time // the earliest such delivery's last update
}

// AlertStore keeps alert state (docs/design.md, "Alerts").
type AlertStore interface {
	// RecordAlert writes n if its decision holds: AlertOpened only if no alert of the
	// (Kind, Key) is open, AlertStill only if the alert is open and was last notified
	// at or before n.NotifiedBefore, AlertResolved and AlertRefreshed only if it is
	// open (AlertRefreshed updates the summary and count, nothing else). It writes the
	// alert's row, n.Submission, n.Deliveries and an alert.* event in one transaction and
	// reports whether it did; false means another instance decided first.
	RecordAlert(ctx context.Context, n AlertNotice) (bool, error)
	// ListAlerts returns the open alerts ordered by opening time, then, when resolved >
	// 0, up to that many of the most recently resolved ones.
	ListAlerts(ctx context.Context, resolved int) ([]Alert, error)
	// DeadDeliveryGroups counts dead deliveries per (form, route, channel), leaving out
	// the form except (AlertsForm: an alert that died must not alert about itself) and
	// test submissions (a `_test` post or a canary is no lead; a canary's failure is
	// its own alert, canary_failed). Dead deliveries are in the status index, so this
	// reads that small set.
	DeadDeliveryGroups(ctx context.Context, except string) ([]DeadGroup, error)
	// FeedbackCounts counts the post-send reports received since since (an index on
	// their receipt time serves it).
	FeedbackCounts(ctx context.Context, since time.Time) (FeedbackCounts, error)
}

// FeedbackCounts is what the feedback_rate alert reads: reports by kind, and the
// submissions whose e-mail bounced or drew a complaint.
type FeedbackCounts struct {
	Delivered, Bounced, Complained int
	Submissions                    int
}
