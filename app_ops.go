package formoutbox

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyevents"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// opsState is what the App keeps for operations: metrics, events, retention. It is
// embedded in App so app.go stays about delivery.
type opsState struct {
	metrics *adminapi.LiveStats // the live numbers behind health and the gauges
	events  *caddyevents.App
	pruner  *outbox.Pruner // nil when retention is off
}

// provisionOps registers metrics, finds the events app and builds the pruner. Like the
// rest of Provision it starts nothing.
func (a *App) provisionOps() error {
	if err := a.registerMetrics(a.ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("form_outbox: metrics: %w", err)
	}
	if err := a.loadEvents(); err != nil {
		return fmt.Errorf("form_outbox: events: %w", err)
	}
	if a.Retention < 0 {
		return fmt.Errorf("form_outbox: retention must not be negative")
	}
	if a.Retention > 0 {
		p, err := outbox.NewPruner(outbox.RetentionConfig{
			Ops:    a.store,
			Ledger: a.store,
			MaxAge: time.Duration(a.Retention),
			Logger: a.logger.Named("retention"),
		})
		if err != nil {
			return fmt.Errorf("form_outbox: %w", err)
		}
		a.pruner = p
	}
	return nil
}

// startOps makes this App the one the admin API serves and starts retention.
func (a *App) startOps() {
	a.setRunning()
	if a.pruner != nil {
		a.pruner.Start(a.ctx)
		a.logger.Info("retention on", zap.Duration("retention", time.Duration(a.Retention)))
	}
}

// stopOps stops retention and hands the admin API to a newer App, if any.
func (a *App) stopOps() {
	if a.pruner != nil {
		a.pruner.Stop()
	}
	a.unsetRunning()
}
