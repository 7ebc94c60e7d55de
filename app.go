package formoutbox

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/senders"
	"github.com/formoutbox/caddy-form-outbox/internal/storage"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
)

// DefaultFrom is the sender of development (.eml file) email when `email { from }` is
// not set. Real providers get no default: mail from an unverified localhost sender is
// rejected or lands in spam, and the visitor's lead with it.
const DefaultFrom = "form_outbox <form-outbox@localhost>"

// errFromRequired is why a config with a real email provider and no sender is refused.
var errFromRequired = errors.New("from is required (the verified sender address, e.g. from \"Forms <forms@example.com>\")")

// App is the `form_outbox` Caddy app: it owns the store shared by every form handler and
// the worker that delivers their submissions. It is configured by the global option
// block; without one, the first handler loads it with defaults (SQLite under Caddy's data
// dir, .eml files for email), and Caddy starts it like any configured app because
// ctx.App records every app it loads in the running config.
type App struct {
	// Storage selects the database. Default: SQLite under Caddy's data dir.
	Storage *StorageConfig `json:"storage,omitempty"`
	// Worker tunes the delivery worker.
	Worker *WorkerConfig `json:"worker,omitempty"`
	// Retry sets backoff and attempt budgets.
	Retry *RetryConfig `json:"retry,omitempty"`
	// Email configures the sender address and the email provider.
	Email *EmailConfig `json:"email,omitempty"`
	// Spool is the local fallback when the store fails (spool.go). Default: on, under
	// the data dir.
	Spool *SpoolConfig `json:"spool,omitempty"`
	// Retention prunes submissions older than this whose deliveries are all finished
	// (app_ops.go). Default 0: keep everything.
	Retention caddy.Duration `json:"retention,omitempty"`
	// InboxURL is where operators open the inbox (form_outbox_inbox), e.g.
	// https://example.com/inbox: notification emails link to the submission under it.
	InboxURL string `json:"inbox_url,omitempty"`
	// FilesURL is where form_outbox_files serves signed file links, e.g.
	// https://example.com/files: webhooks and chat messages link to each uploaded file
	// under it, valid for FilesURLTTL (default DefaultFilesURLTTL). Empty: no links.
	FilesURL    string         `json:"files_url,omitempty"`
	FilesURLTTL caddy.Duration `json:"files_url_ttl,omitempty"`

	ctx       caddy.Context
	logger    *zap.Logger
	storage   storage.Config // resolved
	storeKey  string         // set once the store pool holds a reference for this App
	store     outbox.Store
	acceptor  *outbox.Acceptor // takes every handler's submissions: store or spool
	worker    *outbox.Worker
	ipHashKey []byte
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

	opsState // metrics, events, retention (app_ops.go)

	stopOnce sync.Once
	stopErr  error
}

// WorkerConfig is the JSON twin of the `worker { ... }` block. Zero values mean the
// defaults of outbox.WorkerConfig.
type WorkerConfig struct {
	// Disabled runs no worker in this instance (`worker off`): it takes submissions and,
	// with notifications on, wakes the workers of the instances that deliver them, but
	// sends nothing itself. For intake and delivery scaled separately on PostgreSQL.
	Disabled bool `json:"disabled,omitempty"`
	// Concurrency is the most sends in flight. Default 8.
	Concurrency int `json:"concurrency,omitempty"`
	// PollInterval is the tick that finds due work even without a wake-up. Default 15s.
	PollInterval caddy.Duration `json:"poll_interval,omitempty"`
	// Lease is how long a claim holds a delivery before another worker may take it. Default 2m.
	Lease caddy.Duration `json:"lease,omitempty"`
	// Batch is the most deliveries one claim takes. Default 25.
	Batch int `json:"batch,omitempty"`
	// ShutdownGrace is how long Stop lets in-flight sends finish. Default 10s.
	ShutdownGrace caddy.Duration `json:"shutdown_grace,omitempty"`
	// Notifications enables LISTEN/NOTIFY wake-ups across instances on PostgreSQL.
	// Default on; off leaves delivery to the tick.
	Notifications *bool `json:"notifications,omitempty"`
}

// RetryConfig is the JSON twin of the `retry { ... }` block.
type RetryConfig struct {
	// Base is the delay after the first failed attempt. Default 30s.
	Base caddy.Duration `json:"base,omitempty"`
	// MaxDelay caps the exponential backoff. Default 6h.
	MaxDelay caddy.Duration `json:"max_delay,omitempty"`
	// EmailAttempts and WebhookAttempts are the attempt budgets. Defaults 8 and 10.
	EmailAttempts   int `json:"email_attempts,omitempty"`
	WebhookAttempts int `json:"webhook_attempts,omitempty"`
}

// EmailConfig is the JSON twin of the `email { ... }` block.
type EmailConfig struct {
	// From is the verified sender of every email; visitors only ever reach Reply-To.
	From string `json:"from,omitempty"`
	// File writes each email as an .eml file (development). It is also what runs when no
	// provider is configured, into <data dir>/form_outbox/mail.
	File *FileConfig `json:"file,omitempty"`
	// SES, Resend and SMTP send real email (sender.go); with several, they are tried in
	// that order, and the next takes over within the same attempt when one fails in a way
	// another can help with.
	SES    *SESConfig    `json:"ses,omitempty"`
	Resend *ResendConfig `json:"resend,omitempty"`
	SMTP   *SMTPConfig   `json:"smtp,omitempty"`
}

// FileConfig configures the development email provider.
type FileConfig struct {
	Dir string `json:"dir,omitempty"`
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

	if err := a.checkNumbers(); err != nil {
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
		return fmt.Errorf("email: %w", errFromRequired)
	}
	if a.Email != nil && a.Email.From != "" {
		a.from = caddy.NewReplacer().ReplaceKnown(a.Email.From, "")
	}
	if _, err := mail.ParseAddress(a.from); err != nil {
		return fmt.Errorf("email from %q: %w", a.from, err)
	}
	a.mailDir = filepath.Join(caddy.AppDataDir(), AppName, "mail")
	if a.Email != nil && a.Email.File != nil && a.Email.File.Dir != "" {
		a.mailDir = a.Email.File.Dir
	}

	a.ipHashKey, err = loadIPHashKey()
	if err != nil {
		return err
	}
	if a.FilesURL != "" {
		if err := intakeCheckURL(a.FilesURL); err != nil {
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

	store, err := loadStore(sc)
	if err != nil {
		return err
	}
	a.store, a.storeKey = store, sc.PoolKey()

	a.worker = outbox.NewWorker(a.workerConfig(sender))
	if err := a.provisionOps(); err != nil {
		return err
	}
	if err := a.provisionSpool(); err != nil {
		return err
	}
	a.acceptor = &outbox.Acceptor{
		Store:      store,
		WriteAhead: a.spoolMode == SpoolAlways,
		Waker:      a.worker,
		OnStored:   a.observer().Stored,
		Logger:     a.logger,
	}
	if sc.Driver == DriverSQLite {
		// One writer connection: a second shared transaction would only queue behind the
		// first with a smaller batch.
		a.acceptor.Group.Flushers = 1
	}
	return nil
}

func (a *App) checkNumbers() error {
	if w := a.Worker; w != nil {
		if w.Concurrency < 0 || w.Batch < 0 || w.PollInterval < 0 || w.Lease < 0 || w.ShutdownGrace < 0 {
			return fmt.Errorf("worker: concurrency, batch, poll_interval, lease and shutdown_grace must not be negative")
		}
	}
	if r := a.Retry; r != nil {
		if r.Base < 0 || r.MaxDelay < 0 || r.EmailAttempts < 0 || r.WebhookAttempts < 0 {
			return fmt.Errorf("retry: base, max_delay, email_attempts and webhook_attempts must not be negative")
		}
	}
	return nil
}

func (a *App) workerConfig(sender outbox.Sender) outbox.WorkerConfig {
	wc := outbox.WorkerConfig{
		Store:         a.store,
		Sender:        sender,
		Logger:        a.logger.Named("worker"),
		Notifications: true,
		OnDead:        a.observer().Dead,
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
	return wc
}

// workerDisabled reports `worker off`. The worker is still built (never started): its
// Broadcast wakes other instances' workers after each accepted submission.
func (a *App) workerDisabled() bool { return a.Worker != nil && a.Worker.Disabled }

// attempts returns the App's attempt budgets for handlers to plan deliveries with.
func (a *App) attempts() (email, webhook int) {
	email, webhook = outbox.DefaultEmailAttempts, outbox.DefaultWebhookAttempts
	if r := a.Retry; r != nil {
		if r.EmailAttempts > 0 {
			email = r.EmailAttempts
		}
		if r.WebhookAttempts > 0 {
			webhook = r.WebhookAttempts
		}
	}
	return email, webhook
}

// Start opens the spool (taking its directory's lock) and starts the worker.
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
	if a.workerDisabled() {
		a.logger.Info("worker off: this instance takes submissions and delivers none")
	} else if err := a.worker.Start(a.ctx); err != nil {
		return fmt.Errorf("form_outbox: %w", err)
	}
	a.startOps()
	storage.WarnIfUnreachable(a.ctx, a.store, a.storage, a.logger)
	return nil
}

// Stop stops the worker gracefully (shutdown_grace). It leaves the store open: on a
// reload the new App already shares it, and Cleanup releases this App's reference.
func (a *App) Stop() error {
	a.stopOnce.Do(func() {
		a.stopOps()
		a.stopSpool()
		if a.worker != nil {
			a.stopErr = a.worker.Stop(context.Background())
		}
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
