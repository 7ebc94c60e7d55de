package formoutbox

import (
	"errors"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Caddy event names. Subscribe with `events { on form_outbox.delivery_dead <handler> }`.
const (
	EventNameSubmissionReceived = "form_outbox.submission_received"
	EventNameDeliveryDead       = "form_outbox.delivery_dead"
)

// loadEvents finds Caddy's events app when the config has one. Subscriptions exist only
// in a configured events app (the `events` global option), so without one nobody could
// hear our events and there is nothing to load.
func (a *App) loadEvents() error {
	v, err := a.ctx.AppIfConfigured("events")
	if errors.Is(err, caddy.ErrNotConfigured) {
		return nil
	}
	if err != nil {
		return err
	}
	a.events = v.(*caddyevents.App)
	return nil
}

// The events carry ids, names and statuses only: handlers may run shell commands or
// forward to chat, and visitor data must not travel there. Look the rest up through the
// admin API.

func (a *App) emitSubmissionReceived(sub *outbox.Submission, stored outbox.AcceptResult) {
	if a.events == nil {
		return
	}
	reason := sub.Reason
	if stored.KeyReused { // stored quarantined under this reason, not sub's (outbox.Accept)
		reason = outbox.ReasonIdempotencyKeyReused
	}
	a.events.Emit(a.ctx, EventNameSubmissionReceived, map[string]any{
		"submission_id": stored.ID.String(),
		"form":          sub.Form,
		"status":        string(stored.Status),
		"reason":        reason,
	})
}

func (a *App) emitDeliveryDead(d outbox.Delivery) {
	if a.events == nil {
		return
	}
	a.events.Emit(a.ctx, EventNameDeliveryDead, map[string]any{
		"delivery_id":   d.ID.String(),
		"submission_id": d.SubmissionID.String(),
		"route":         d.Route,
		"channel":       string(d.Channel),
		"attempts":      d.Attempts,
		"provider":      d.Provider,
	})
}
