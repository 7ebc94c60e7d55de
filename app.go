package formoutbox

import (
	"context"
	"fmt"
	"net/mail"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
	"github.com/formoutbox/caddy-form-outbox/internal/senders"
	"github.com/formoutbox/caddy-form-outbox/internal/storage"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
)

// DefaultFrom is the sender of development (.eml file) email when `email { from }` is
// not set (caddyconf.DefaultFrom says why).
const DefaultFrom = caddyconf.DefaultFrom

// App is the `form_outbox` Caddy app: it owns the store shared by every form handler and
// the worker that delivers their submissions. It is configured by the global option
// block; without one, the first handler loads it with defaults (SQLite under Caddy's data
// dir, .eml files for email), and Caddy starts it like any configured app because
// ctx.App records every app it loads in the running config.
type App struct {
	// caddyconf.App is the JSON config (internal/caddyconf/config.go), inline.
	caddyconf.App

	ctx       caddy.Context
	logger    *zap.Logger
	storage   storage.Config // resolved
	storeKey  string         // set once the store pool holds a reference for this App
	store     outbox.Store
	acceptor  *outbox.Acceptor // takes every handler's submissions: store or spool
	worker    *outbox.Worker
	ipHashKey []byte
	spamKey   []byte // signs spam tokens (spamkey.go)
	filesKey  []byte // signs file links (files_handler.go)
	from      string
	mailDir   string

	// registry holds the webhook secrets and headers and the Telegram bots the form
	// handlers register (handler.go), looked up by the providers at send time.
	registry senders.Registry

	emailProviderName string

	spoolDir  string // resolved at Provision; "" when off
	spoolMode string
	spoolKey  string                         // set once Start holds a reference in spools
	spoolRT   atomic.Pointer[spool.Fallback] // nil until Start opens the spool (spool.go)

	opsState             // metrics, events, retention (app_ops.go)
	digests  digestState // digest routes and their closer (app_digest.go)
	alerts   alertState  // owner alerts: targets, sources, evaluator (app_alerts.go)
	ledger   ledgerState // the lead ledger's counts and checks (app_ledger.go)
	backups  backupState // off-host backup (app_backup.go)
	canaries canaryState // the forms' canaries and their scheduler (app_canary.go)

	stopOnce sync.Once
	stopErr  error
}

// CaddyModule returns the Caddy module information.
func (*App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  AppName,
		New: func() caddy.Module { return new(App) },
	}
}

// Provision resolves the config, opens (or shares) the store and builds the worker. It
// starts nothing: `caddy validate` and `caddy adapt` provision apps they never start.
func (a *App) Provision(ctx caddy.Context) error {
	a.ctx = ctx
	a.logger = ctx.Logger()

	if err := a.CheckNumbers(); err != nil {
		return err
	}
	if a.InboxURL != "" {
		if err := intake.CheckInboxURL(a.InboxURL); err != nil {
			return fmt.Errorf("form_outbox: inbox_url %v", err)
		}
	}
	sc, err := resolvedStorage(a.Storage)
	if err != nil {
		return err
	}
	a.storage = sc

	a.from = DefaultFrom
	if e := a.Email; e != nil && e.From == "" && (e.SES != nil || e.Resend != nil || e.SMTP != nil) {
		return fmt.Errorf("email: %w", caddyconf.ErrFromRequired)
	}
	if a.Email != nil && a.Email.From != "" {
		a.from = caddy.NewReplacer().ReplaceKnown(a.Email.From, "")
	}
	if _, err := mail.ParseAddress(a.from); err != nil {
		return fmt.Errorf("email from %q: %w", a.from, err)
	}
	a.mailDir = a.App.MailDir(caddy.AppDataDir())

	a.ipHashKey, err = loadIPHashKey()
	if err != nil {
		return err
	}
	if a.spamKey, err = loadSpamKey(); err != nil {
		return err
	}
	if a.FilesURL != "" {
		if err := caddyconf.CheckFilesURL(a.FilesURL); err != nil {
			return fmt.Errorf("form_outbox: files_url %v", err)
		}
		if a.filesKey, err = loadFilesKey(); err != nil {
			return err
		}
	}

	sender, err := a.buildSender()
	if err != nil {
		return err
	}
	pacer, err := a.buildPacer()
	if err != nil {
		return err
	}

	store, err := loadStore(sc)
	if err != nil {
		return err
	}
	a.store, a.storeKey = store, sc.PoolKey()

	wc := a.workerConfig(sender)
	wc.Pacer = pacer
	a.worker = outbox.NewWorker(wc)
	a.provisionLedger()
	if err := a.provisionOps(); err != nil {
		return err
	}
	if err := a.provisionSpool(); err != nil {
		return err
	}
	if err := a.provisionAlerts(); err != nil {
		return err
	}
	if err := a.provisionBackup(); err != nil {
		return err
	}
	a.acceptor = &outbox.Acceptor{
		Store:      store,
		WriteAhead: a.spoolMode == caddyconf.SpoolAlways,
		Waker:      a.worker,
		OnStored:   a.observer().Stored,
		Logger:     a.logger,
	}
	if a.Backup != nil {
		a.acceptor.OnNotJournaled = a.notJournaled // app_backup.go
	}
	if sc.Driver == storage.DriverSQLite {
		// One writer connection: a second shared transaction would only queue behind the
		// first with a smaller batch.
		a.acceptor.Group.Flushers = 1
	}
	return nil
}

func (a *App) workerConfig(sender outbox.Sender) outbox.WorkerConfig {
	wc := outbox.WorkerConfig{
		Store:         a.store,
		Sender:        sender,
		Logger:        a.logger.Named("worker"),
		Notifications: true,
		OnDead:        a.onDead,
		OnAttempt:     a.observer().Attempt,
	}
	if w := a.Worker; w != nil {
		wc.Concurrency = w.Concurrency
		wc.Batch = w.Batch
		wc.Lease = time.Duration(w.Lease)
		wc.PollInterval = time.Duration(w.PollInterval)
		wc.ShutdownGrace = time.Duration(w.ShutdownGrace)
		if w.Notifications != nil {
			wc.Notifications = *w.Notifications
		}
	}
	if r := a.Retry; r != nil {
		wc.Retry = outbox.RetryPolicy{Base: time.Duration(r.Base), MaxDelay: time.Duration(r.MaxDelay)}
	}
	wc.Parking = a.Park.Policy(a.emailProviderName)
	wc.OnPark, wc.OnUnpark, wc.OnHold = a.observer().Parked, a.observer().Unparked, a.observer().Held
	return wc
}

// Start opens the spool (taking its directory's lock) and starts the worker and, with
// digest routes, the digest closer beside it (app_digest.go), and with canaries their
// scheduler (app_canary.go).
func (a *App) Start() error {
	a.logger.Info("form_outbox starting",
		zap.String("storage", a.storage.Describe()),
		zap.String("worker", a.worker.Owner()))
	if a.emailProviderName == "file" {
		a.logger.Info("email provider: file (development)", zap.String("dir", a.mailDir))
	} else {
		a.logger.Info("email provider", zap.String("providers", a.emailProviderName))
	}
	// The spool first: a second Caddy on one spool directory fails here before its worker
	// claims anything. Cleanup (which runs after a failed Start) stops what did start.
	if err := a.startSpool(); err != nil {
		return fmt.Errorf("form_outbox: %w", err)
	}
	a.startBackup()
	if a.WorkerOff() {
		// The worker is still built (never started): its Broadcast wakes other
		// instances' workers after each accepted submission.
		a.logger.Info("worker off: this instance takes submissions and delivers none")
	} else if err := a.worker.Start(a.ctx); err != nil {
		return fmt.Errorf("form_outbox: %w", err)
	}
	a.startDigests()
	a.startLedger()
	a.startCanaries()
	a.startOps()
	a.startAlerts()
	storage.WarnIfUnreachable(a.ctx, a.store, a.storage, a.logger)
	return nil
}

// Stop stops the worker gracefully (shutdown_grace). It leaves the store open: on a
// reload the new App already shares it, and Cleanup releases this App's reference.
func (a *App) Stop() error {
	a.stopOnce.Do(func() {
		a.stopAlerts()
		a.stopDigests()
		a.stopCanaries()
		a.stopOps()
		a.stopBackup()
		a.stopSpool()
		if a.worker != nil {
			a.stopErr = a.worker.Stop(context.Background())
		}
		a.stopLedger()
	})
	return a.stopErr
}

// Cleanup releases what Provision acquired; it also runs after a failed Provision, so it
// releases the store only if this App got a reference to it.
func (a *App) Cleanup() error {
	err := a.Stop()
	if serr := a.releaseSpool(); serr != nil {
		a.logger.Error("close spool", zap.Error(serr))
	}
	if a.storeKey != "" {
		key := a.storeKey
		a.storeKey = ""
		if _, derr := stores.Delete(key); derr != nil {
			a.logger.Error("close outbox store", zap.String("storage", a.storage.Describe()), zap.Error(derr))
			if err == nil {
				err = derr
			}
		}
	}
	return err
}

// Interface guards.
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
