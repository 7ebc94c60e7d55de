package formoutbox

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/backup"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
)

// running is the App of the running config. Caddy provisions admin modules before apps
// and starts a reload's new App before it stops the old one, so the admin API looks the
// App up per request: Start installs it, Stop removes it only if it is still the current.
var running atomic.Pointer[App]

func (a *App) setRunning()   { running.Store(a) }
func (a *App) unsetRunning() { running.CompareAndSwap(a, nil) }

// adminServer holds the routes (internal/adminapi/server.go); it serves whichever App
// is running.
var adminServer = adminapi.NewServer(func() adminapi.Backend {
	if a := running.Load(); a != nil {
		return adminBackend{a}
	}
	return nil
})

// AdminAPI is the `admin.api.form_outbox` module: health and control of the outbox on
// Caddy's admin endpoint, so Caddy's admin access rules (listen address, origins, remote
// admin identities) protect it. Every admin.api module is loaded by Caddy itself; there
// is nothing to configure.
type AdminAPI struct{}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.form_outbox",
		New: func() caddy.Module { return new(AdminAPI) },
	}
}

// Routes hands everything under /form_outbox/ to the admin server's mux.
func (AdminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: adminapi.Prefix, Handler: caddy.AdminHandlerFunc(serveAdmin)}}
}

// serveAdmin gives the admin server's errors to Caddy, which answers them as
// {"error": "..."} with their status and logs them.
func serveAdmin(w http.ResponseWriter, r *http.Request) error {
	err := adminServer.ServeAdmin(w, r)
	var re *adminapi.RouteError
	if errors.As(err, &re) {
		return caddy.APIError{HTTPStatus: re.Status, Err: re.Err}
	}
	return err
}

// adminBackend is the App as the admin routes see it.
type adminBackend struct{ a *App }

func (b adminBackend) Store() outbox.Store               { return b.a.store }
func (b adminBackend) Logger() *zap.Logger               { return b.a.logger }
func (b adminBackend) Wake(ctx context.Context)          { b.a.worker.Broadcast(ctx) }
func (b adminBackend) Health(ctx context.Context) Health { return b.a.health(ctx) }
func (b adminBackend) Parker() outbox.Parker             { return b.a.worker }
func (b adminBackend) Ledger(ctx context.Context, forms []string, days int) (outbox.Ledger, error) {
	return b.a.Ledger(ctx, forms, days)
}
func (b adminBackend) ReplaySpool(ctx context.Context) (spool.Report, error) {
	return b.a.ReplaySpool(ctx)
}
func (b adminBackend) RestoreBackup(ctx context.Context, w backup.Window, opt backup.RestoreOptions) (backup.RestoreReport, error) {
	return b.a.RestoreBackup(ctx, w, opt) // app_backup.go
}

// Health is the body of GET /form_outbox/health (internal/adminapi/views.go).
type Health = adminapi.Health

// SpoolHealth is the spool's part of the health body.
type SpoolHealth = adminapi.SpoolHealth

// health is the App's health as adminapi.CheckHealth judges it.
func (a *App) health(ctx context.Context) Health {
	return adminapi.CheckHealth(ctx, adminapi.HealthProbe{
		Store:          a.store,
		Driver:         a.storage.Driver,
		Explain:        a.storageError,
		Worker:         a.worker,
		WorkerDisabled: a.WorkerOff(),
		PollInterval:   a.pollInterval(),
		Spool:          a.spoolHealth,
		Stats:          a.metrics,
		Backup:         a.backupHealth(),
		Canary:         a.canaryResults, // app_canary.go
	})
}

// pollInterval is the worker's resolved tick: the worker owns its default
// (outbox/worker.go), health only reads it.
func (a *App) pollInterval() time.Duration {
	if a.worker != nil {
		return a.worker.PollInterval()
	}
	return outbox.DefaultPollInterval
}

// Interface guards.
var (
	_ caddy.Module         = AdminAPI{}
	_ caddy.AdminRouter    = AdminAPI{}
	_ adminapi.Backend     = adminBackend{}
	_ adminapi.WorkerState = (*outbox.Worker)(nil)
)
