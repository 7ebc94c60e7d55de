package telemetry

import "github.com/formoutbox/caddy-form-outbox/outbox"

// Event names. Subscribe with `events { on form_outbox.delivery_dead <handler> }`.
const (
	EventSubmissionReceived = "form_outbox.submission_received"
	EventDeliveryDead       = "form_outbox.delivery_dead"
	// EventDeliveryFeedback is every recorded bounce, complaint and delivery report.
	EventDeliveryFeedback = "form_outbox.delivery_feedback"
)

// Observer counts what the outbox reports through its hooks and announces it as events.
// Its methods are the hooks: outbox.WorkerConfig's OnAttempt and OnDead, outbox.Acceptor's
// OnStored, and outbox/feedback's OnRecorded.
//
// The events carry ids, names and statuses only: their handlers may run shell commands
// or forward to chat, and visitor data must not travel there. Look the rest up through
// the admin API.
type Observer struct {
	// Emit sends one event; nil sends none.
	Emit func(name string, data map[string]any)
}

func (o Observer) emit(name string, data map[string]any) {
	if o.Emit != nil {
		o.Emit(name, data)
	}
}

// Attempt counts one delivery attempt and its time with the provider(s).
func (o Observer) Attempt(d outbox.Delivery, at outbox.Attempt) {
	provider := at.Provider
	if provider == "" {
		provider = "none"
	}
	deliveriesTotal.WithLabelValues(string(d.Channel), provider, string(at.Outcome)).Inc()
	if dur := at.FinishedAt.Sub(at.StartedAt); dur >= 0 {
		deliveryDuration.WithLabelValues(string(d.Channel)).Observe(dur.Seconds())
	}
}

// Dead counts a delivery the worker gave up on and announces it. The worker has already
// logged the death with ids and error classes.
func (o Observer) Dead(d outbox.Delivery) {
	deadTotal.WithLabelValues(string(d.Channel)).Inc()
	o.emit(EventDeliveryDead, map[string]any{
		"delivery_id":   d.ID.String(),
		"submission_id": d.SubmissionID.String(),
		"route":         d.Route,
		"channel":       string(d.Channel),
		"attempts":      d.Attempts,
		"provider":      d.Provider,
	})
}

// Stored counts a newly stored submission and announces it; a duplicate (the same
// idempotency key answered again) is neither.
func (o Observer) Stored(sub *outbox.Submission, stored outbox.AcceptResult) {
	if stored.Duplicate {
		return
	}
	submissionsTotal.WithLabelValues(sub.Form, string(stored.Status)).Inc()
	reason := sub.Reason
	if stored.KeyReused { // stored quarantined under this reason, not sub's (outbox.Accept)
		reason = outbox.ReasonIdempotencyKeyReused
	}
	o.emit(EventSubmissionReceived, map[string]any{
		"submission_id": stored.ID.String(),
		"form":          sub.Form,
		"status":        string(stored.Status),
		"reason":        reason,
	})
}

// Feedback counts recorded feedback, and the delivery as dead when a hard bounce killed
// it, and announces it with ids and classes only.
func (o Observer) Feedback(f outbox.Feedback, res outbox.FeedbackResult) {
	feedbackTotal.WithLabelValues(f.Source, string(f.Kind), f.BounceType).Inc()
	if res.Dead {
		deadTotal.WithLabelValues(string(res.Delivery.Channel)).Inc()
	}
	o.emit(EventDeliveryFeedback, map[string]any{
		"delivery_id":   res.Delivery.ID.String(),
		"submission_id": res.Delivery.SubmissionID.String(),
		"route":         res.Delivery.Route,
		"source":        f.Source,
		"kind":          string(f.Kind),
		"bounce_type":   f.BounceType,
		"dead":          res.Dead,
		"suppressed":    res.Suppressed,
	})
}

// Parked counts a destination this instance parked (docs/operations.md, "Parked
// destinations"). The worker has logged it with its key, label and reason.
func (o Observer) Parked(dest outbox.Destination, _ string) {
	parksTotal.WithLabelValues(string(dest.Channel)).Inc()
}

// Unparked counts a destination this instance unparked.
func (o Observer) Unparked(string, int) { unparksTotal.Inc() }

// Held counts a delivery held because its destination is parked.
func (o Observer) Held(_ outbox.Delivery, dest outbox.Destination) {
	heldTotal.WithLabelValues(string(dest.Channel)).Inc()
}
