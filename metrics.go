package formoutbox

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/internal/telemetry"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// registerMetrics adds the outbox's metrics (internal/telemetry) and this App's live
// numbers to this config's registry.
func (a *App) registerMetrics(reg *prometheus.Registry) error {
	a.metrics = adminapi.NewLiveStats(a.store)
	if reg == nil {
		return nil
	}
	return telemetry.Register(reg, a.metrics, telemetry.ParkedGauges(func() outbox.DestinationStore { return a.store }))
}
