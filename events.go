package formoutbox

import (
	"errors"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"

	"github.com/formoutbox/caddy-form-outbox/internal/telemetry"
)

// Caddy event names (internal/telemetry/observer.go builds their payloads). Subscribe
// with `events { on form_outbox.delivery_dead <handler> }`.
const (
	EventNameSubmissionReceived = telemetry.EventSubmissionReceived
	EventNameDeliveryDead       = telemetry.EventDeliveryDead
	EventNameDeliveryFeedback   = telemetry.EventDeliveryFeedback
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

// observer is the telemetry the worker, acceptor and feedback hooks report to. Its events
// reach Caddy's events app, looked up when they happen: the worker's hooks are taken
// before provisionOps loads the events app.
func (a *App) observer() telemetry.Observer {
	return telemetry.Observer{Emit: func(name string, data map[string]any) {
		if a.events != nil {
			a.events.Emit(a.ctx, name, data)
		}
	}}
}
