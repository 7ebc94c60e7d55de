package outbox

import (
	"context"
	"time"
)

// Alert kinds: what can raise an owner alert (docs/operations.md, "Alerts"). A kind is
// part of an alert's identity, so never rename one that has shipped.
const (
	AlertDeliveryDead      = "delivery_dead"      // a delivery gave up
	AlertUnrouted          = "unrouted"           // a submission was stored with no route
	AlertTemplateEmpty     = "template_empty"     // a template rendered a field that was not there
	AlertDestinationParked = "destination_parked" // a destination is parked
	AlertStoreUnreachable  = "store_unreachable"  // posts are being spooled
	AlertSpoolBacklog      = "spool_backlog"      // the spool still holds entries
	AlertFeedbackRate      = "feedback_rate"      // bounces or complaints above a rate
	AlertCanaryFailed      = "canary_failed"      // a canary delivery did not arrive
	AlertLedgerMismatch    = "ledger_mismatch"    // the lead ledger shows a loss
	AlertBackupLag         = "backup_lag"         // reserved for off-host backups
)

// AlertCondition is one thing that is wrong now, as an AlertSource sees it. Alerts are
// state, not events: an alert opens the first time a source reports (Kind, Key), counts
// while it keeps being reported, and resolves once it is not. A source of event-like
// conditions (a delivery went dead, a submission was unrouted) reports them while they
// are unhandled or within its window, so "resolved" means handled or quiet.
type AlertCondition struct {
	Kind string
	// Key tells conditions of one kind apart (a form, a destination key, an instance);
	// (Kind, Key) is what alerts are deduplicated on, across instances.
	Key string
	// Summary is one line for a person: what happened. Never visitor data or secrets.
	Summary string
	// Affected counts the leads (submissions) affected, 0 when none or unknown.
	Affected int
	// Form is the form concerned, "" for the whole instance.
	Form string
	// Channel is the channel that is failing, if any ("email", "webhook", "telegram",
	// ...): the alert must not travel through it.
	Channel string
	// Destination is the failing destination's key, if any (see docs/operations.md,
	// "Parked destinations"): the alert must not travel to it.
	Destination string
	// Since is when the condition began, as far as the source knows (zero: unknown).
	Since time.Time
	// Local marks a condition of this instance's in-process state (the spool, the store
	// as this process sees it): the alert records the instance, and only this instance's
	// evaluator resolves it, since another instance cannot see the condition.
	Local bool
}

// AlertSource reports the conditions that hold now. Sources are polled by the alert
// evaluator (outbox/alert); they must be cheap (indexed reads or in-process state) and
// safe to call from several instances at once.
type AlertSource interface {
	// Name names the source in logs and errors.
	Name() string
	Conditions(ctx context.Context, now time.Time) ([]AlertCondition, error)
}

// AlertSourceFunc adapts a function to AlertSource.
type AlertSourceFunc struct {
	SourceName string
	Func       func(ctx context.Context, now time.Time) ([]AlertCondition, error)
}

// Name implements AlertSource.
func (f AlertSourceFunc) Name() string { return f.SourceName }

// Conditions implements AlertSource.
func (f AlertSourceFunc) Conditions(ctx context.Context, now time.Time) ([]AlertCondition, error) {
	return f.Func(ctx, now)
}
