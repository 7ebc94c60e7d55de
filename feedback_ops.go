package formoutbox

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// EventNameDeliveryFeedback is the Caddy event of every recorded bounce, complaint and
// delivery report. Subscribe with `events { on form_outbox.delivery_feedback <handler> }`.
const EventNameDeliveryFeedback = "form_outbox.delivery_feedback"

// feedbackTotal counts recorded feedback; package level like the other counters so it
// survives reloads.
var feedbackTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "form_outbox_feedback_total",
	Help: "Post-send reports recorded, by source (ses, resend), kind (delivered, bounced, complained) and bounce type (hard, soft, or empty).",
}, []string{"source", "kind", "bounce_type"})

// onFeedback is the feedback receiver's OnRecorded hook: a counter, the dead counter when
// a hard bounce killed the delivery, and a Caddy event with ids and classes only.
func (a *App) onFeedback(f outbox.Feedback, res outbox.FeedbackResult) {
	feedbackTotal.WithLabelValues(f.Source, string(f.Kind), f.BounceType).Inc()
	if res.Dead {
		deadTotal.WithLabelValues(string(res.Delivery.Channel)).Inc()
	}
	if a.events == nil {
		return
	}
	a.events.Emit(a.ctx, EventNameDeliveryFeedback, map[string]any{
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

// feedbackStore is the App's store seen as a feedback store, nil while no store is open.
func (a *App) feedbackStore() outbox.FeedbackStore {
	if a.store == nil {
		return nil
	}
	return a.store
}
