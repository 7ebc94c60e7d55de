package formoutbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
	"github.com/formoutbox/caddy-form-outbox/internal/telemetry"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
)

// spools shares one open spool per directory across config reloads, so two Apps never
// append to one directory through two handles.
var spools = caddy.NewUsagePool()

type pooledSpool struct{ *spool.Spool }

func (p pooledSpool) Destruct() error { return p.Spool.Close() }

// provisionSpool resolves the spool's mode and directory. It opens nothing: opening takes
// the directory's lock (outbox/spool/lock_unix.go), and `caddy validate` or `caddy adapt
// --validate` provision this App next to a running Caddy that holds that lock.
func (a *App) provisionSpool() error {
	var sc caddyconf.SpoolConfig
	if a.Spool != nil {
		sc = *a.Spool
	}
	if err := spool.CheckMode(sc.Mode); err != nil {
		return err
	}
	if sc.Mode == caddyconf.SpoolOff {
		return nil
	}
	a.spoolMode = sc.Mode
	dir := caddy.NewReplacer().ReplaceKnown(sc.Dir, "")
	if dir == "" {
		dir = filepath.Join(caddy.AppDataDir(), AppName, "spool")
	}
	abs, err := caddy.FastAbs(dir)
	if err != nil {
		return fmt.Errorf("spool dir %q: %w", dir, err)
	}
	a.spoolDir = abs
	a.registerSpoolMetric()
	return nil
}

// startSpool opens (or shares, across a reload) the spool and starts its replayer. A
// second running Caddy on the same directory fails here, naming the holder.
func (a *App) startSpool() error {
	if a.spoolDir == "" {
		return nil
	}
	abs := a.spoolDir
	val, _, err := spools.LoadOrNew(abs, func() (caddy.Destructor, error) {
		s, err := spool.Open(abs, spool.Options{})
		if errors.Is(err, spool.ErrInUse) {
			return nil, fmt.Errorf("%w; give each Caddy instance its own spool directory (spool DIR in the form_outbox global options) or data directory", err)
		}
		if err != nil {
			return nil, err
		}
		return pooledSpool{s}, nil
	})
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	a.spoolKey = abs
	f := spool.StartFallback(val.(pooledSpool).Spool, a.store, a.logger.Named("spool"),
		func() { a.worker.Broadcast(context.Background()) }, a.ledgerReplayed)
	a.spoolRT.Store(f)
	a.acceptor.SetSpool(f)
	return nil
}

// openSpool is the spool once Start opened it, else nil. Caddy starts its apps in no set
// order, so the HTTP app may serve a request before this App's Start: such a request is
// answered as with the spool off (a store failure is a 503), never silently dropped.
func (a *App) openSpool() *spool.Fallback { return a.spoolRT.Load() }

// registerSpoolMetric exports the spool's depth. Each config has its own registry; a
// reload registers the new App's gauge in the new one.
func (a *App) registerSpoolMetric() {
	reg := a.ctx.GetMetricsRegistry()
	if reg == nil {
		return
	}
	g := telemetry.SpoolGauge(func() int {
		if f := a.openSpool(); f != nil {
			return f.Waiting()
		}
		return 0
	})
	if err := telemetry.RegisterOnce(reg, g); err != nil {
		a.logger.Warn("register spool metric", zap.Error(err))
	}
}

// stopSpool stops the replayer; the spool stays open until Cleanup releases it.
func (a *App) stopSpool() {
	if f := a.openSpool(); f != nil {
		f.Stop()
	}
}

// releaseSpool gives back this App's reference (Cleanup; also after a failed Start).
func (a *App) releaseSpool() error {
	if a.spoolKey == "" {
		return nil
	}
	key := a.spoolKey
	a.spoolKey = ""
	_, err := spools.Delete(key)
	return err
}

// spoolHealth is the spool's part of the health answer (internal/adminapi/health.go).
func (a *App) spoolHealth() SpoolHealth {
	var s *spool.Spool
	if f := a.openSpool(); f != nil {
		s = f.Spool
	}
	return adminapi.SpoolHealthFor(s)
}

// SpoolStats is the spool's depth for health checks (zero when the spool is off).
func (a *App) SpoolStats() (entries int, oldestAgeSeconds float64, on bool) {
	f := a.openSpool()
	if f == nil {
		return 0, 0, false
	}
	return f.Waiting(), f.Spool.OldestAge().Seconds(), true
}

// ReplaySpool runs one replay pass now (admin API); adminapi.ErrSpoolOff when off.
func (a *App) ReplaySpool(ctx context.Context) (spool.Report, error) {
	f := a.openSpool()
	if f == nil {
		return spool.Report{}, adminapi.ErrSpoolOff
	}
	return f.Replayer.ReplayNow(ctx)
}
