// Package caddyconf is the configuration of the form_outbox Caddy modules: the JSON types
// the root package's modules embed (so the JSON shape is theirs, inline) and the
// Caddyfile grammar that fills them, with each error naming its Caddyfile line. It is
// Caddy glue in a room of its own: it imports Caddy's config packages, never the root
// package, and the root's UnmarshalCaddyfile methods delegate to it (docs/design.md,
// "Architecture").
package caddyconf

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/storage"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
)

// AppName is the App's module ID and the name of the global option that configures it.
const AppName = "form_outbox"

// DefaultFrom is the sender of development (.eml file) email when `email { from }` is
// not set. Real providers get no default: mail from an unverified localhost sender is
// rejected or lands in spam, and the visitor's lead with it.
const DefaultFrom = "form_outbox <form-outbox@localhost>"

// ErrFromRequired is why a config with a real email provider and no sender is refused.
var ErrFromRequired = errors.New("from is required (the verified sender address, e.g. from \"Forms <forms@example.com>\")")

// App is the JSON of the `form_outbox` app, the twin of the global option block
// (ParseApp). The root package's App embeds it inline.
type App struct {
	// Storage selects the database. Default: SQLite under Caddy's data dir.
	Storage *StorageConfig `json:"storage,omitempty"`
	// Worker tunes the delivery worker.
	Worker *WorkerConfig `json:"worker,omitempty"`
	// Retry sets backoff and attempt budgets.
	Retry *RetryConfig `json:"retry,omitempty"`
	// Park says when failing destinations are parked (caddyfile_park.go).
	Park *ParkConfig `json:"park,omitempty"`
	// Email configures the sender address and the email provider.
	Email *EmailConfig `json:"email,omitempty"`
	// Spool is the local fallback when the store fails (outbox/spool). Default: on, under
	// the data dir.
	Spool *SpoolConfig `json:"spool,omitempty"`
	// Backup copies the spool's journal to S3-compatible storage (outbox/backup); it
	// turns the write-ahead spool on.
	Backup *BackupConfig `json:"backup,omitempty"`
	// Retention prunes submissions older than this whose deliveries are all finished
	// (outbox/retention.go). Default 0: keep everything.
	Retention caddy.Duration `json:"retention,omitempty"`
	// InboxURL is where operators open the inbox (form_outbox_inbox), e.g.
	// https://example.com/inbox: notification emails link to the submission under it.
	InboxURL string `json:"inbox_url,omitempty"`
	// FilesURL is where form_outbox_files serves signed file links, e.g.
	// https://example.com/files: webhooks and chat messages link to each uploaded file
	// under it, valid for FilesURLTTL (default 7 days). Empty: no links.
	FilesURL    string         `json:"files_url,omitempty"`
	FilesURLTTL caddy.Duration `json:"files_url_ttl,omitempty"`
	// Canary is every form's canary unless the form sets its own (outbox/canary).
	// Default: none.
	Canary *intake.Canary `json:"canary,omitempty"`
	// Alerts configures owner alerts (docs/operations.md, "Alerts"). Absent: alerts are
	// still evaluated and shown (inbox, CLI, admin API, metrics), and sent nowhere.
	Alerts *AlertsConfig `json:"alerts,omitempty"`
}

// AlertsConfig is the JSON twin of the `alerts { ... }` block (parseAlerts). Zero
// durations and numbers mean the defaults of outbox/alert.
type AlertsConfig struct {
	// Disabled turns the evaluator off (`alerts off`).
	Disabled bool `json:"disabled,omitempty"`
	// Email lists the addresses alerts are e-mailed to, through the configured e-mail
	// providers.
	Email []string `json:"email,omitempty"`
	// Notify lists the chat and webhook targets, in the grammar of a form's routes
	// (channel, url or chat_id, token, endpoint, secret, headers); guards and
	// templates do not apply.
	Notify []intake.Route `json:"notify,omitempty"`
	// Interval is how often the sources are polled. Default 30s.
	Interval caddy.Duration `json:"interval,omitempty"`
	// Renotify is the "still happening" window: at most one notice per alert per
	// window. Default 4h.
	Renotify caddy.Duration `json:"renotify,omitempty"`
	// StoreUnreachable is how long the store must fail (posts going to the spool)
	// before it is an alert. Default 5m.
	StoreUnreachable caddy.Duration `json:"store_unreachable,omitempty"`
	// SpoolBacklog is how old the oldest spooled entry must be to be an alert. Default 15m.
	SpoolBacklog caddy.Duration `json:"spool_backlog,omitempty"`
	// FeedbackRate is the share of e-mails sent within FeedbackWindow that bounced or
	// complained above which it is an alert, in percent. Default 5.
	FeedbackRate float64 `json:"feedback_rate,omitempty"`
	// FeedbackWindow is the window of FeedbackRate. Default 24h.
	FeedbackWindow caddy.Duration `json:"feedback_window,omitempty"`
	// FeedbackMin is the fewest e-mails sent in the window for the rate to count, so
	// one bounce out of three sends is no alert. Default 20.
	FeedbackMin int `json:"feedback_min,omitempty"`
}

// CheckNumbers refuses negative numbers and durations, which a JSON config can carry
// (the Caddyfile grammar already refuses them at their line).
func (a *App) CheckNumbers() error {
	if w := a.Worker; w != nil {
		if w.Concurrency < 0 || w.Batch < 0 || w.PollInterval < 0 || w.Lease < 0 || w.ShutdownGrace < 0 {
			return fmt.Errorf("worker: concurrency, batch, poll_interval, lease and shutdown_grace must not be negative")
		}
	}
	if p := a.Park; p != nil {
		if p.After < 0 || p.Ratio < 0 || p.Ratio > 1 || p.Window < 0 || p.MinSamples < 0 || p.ProbeFirst < 0 || p.ProbeMax < 0 || p.Refresh < 0 {
			return fmt.Errorf("park: after, window, min_samples, probe_first, probe_max and refresh must not be negative, ratio must be within 0 and 1")
		}
	}
	if al := a.Alerts; al != nil {
		if al.Interval < 0 || al.Renotify < 0 || al.StoreUnreachable < 0 || al.SpoolBacklog < 0 || al.FeedbackWindow < 0 ||
			al.FeedbackRate < 0 || al.FeedbackRate > 100 || al.FeedbackMin < 0 {
			return fmt.Errorf("alerts: durations and numbers must not be negative, feedback_rate at most 100")
		}
	}
	if a.Canary != nil {
		if a.Canary.Off {
			return fmt.Errorf("canary off: only a form turns the canary off; the global default is off when unset")
		}
		if err := a.Canary.Check(); err != nil {
			return err
		}
	}
	if r := a.Retry; r != nil {
		if r.Base < 0 || r.MaxDelay < 0 || r.EmailAttempts < 0 || r.WebhookAttempts < 0 {
			return fmt.Errorf("retry: base, max_delay, email_attempts and webhook_attempts must not be negative")
		}
	}
	return nil
}

// WorkerOff reports `worker off`.
func (a *App) WorkerOff() bool { return a.Worker != nil && a.Worker.Disabled }

// Attempts returns the attempt budgets handlers plan deliveries with: the retry block's,
// else the outbox's defaults (outbox/worker.go owns them).
func (a *App) Attempts() (email, webhook int) {
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

// Storage drivers.
const (
	DriverSQLite   = storage.DriverSQLite
	DriverPostgres = storage.DriverPostgres
)

// StorageConfig selects the database. The JSON twin of `storage sqlite [PATH]` and
// `storage postgres DSN`.
type StorageConfig struct {
	// Driver is "sqlite" (default) or "postgres".
	Driver string `json:"driver,omitempty"`
	// Path is the SQLite file. Default: <Caddy data dir>/form_outbox/outbox.db.
	Path string `json:"path,omitempty"`
	// DSN is the PostgreSQL connection string. Placeholders such as {env.DATABASE_URL} are
	// resolved at provision time; the value is a secret and never logged.
	DSN string `json:"dsn,omitempty"`
	// Schema, when set, holds the tables in that PostgreSQL schema (created if missing).
	Schema string `json:"schema,omitempty"`
}

// WorkerConfig is the JSON twin of the `worker { ... }` block. Zero values mean the
// defaults of outbox.WorkerConfig.
type WorkerConfig struct {
	// Disabled runs no worker in this instance (`worker off`): it takes submissions and,
	// with notifications on, wakes the workers of the instances that deliver them, but
	// sends nothing itself. For intake and delivery scaled separately on PostgreSQL.
	Disabled bool `json:"disabled,omitempty"`
	// Concurrency is the most sends in flight. Default 64 (outbox.DefaultConcurrency).
	Concurrency int `json:"concurrency,omitempty"`
	// PollInterval is the tick that finds due work even without a wake-up. Default 15s.
	PollInterval caddy.Duration `json:"poll_interval,omitempty"`
	// Lease is how long a claim holds a delivery before another worker may take it. Default 2m.
	Lease caddy.Duration `json:"lease,omitempty"`
	// Batch is the most deliveries one claim takes. Default 100 (outbox.DefaultBatch).
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

// Spool modes (outbox/spool/fallback.go), the value of `spool DIR | off | always`.
const (
	SpoolOff    = spool.ModeOff
	SpoolAlways = spool.ModeAlways
)

// SpoolConfig is the JSON twin of `spool DIR | off | always [DIR]`.
type SpoolConfig struct {
	// Dir holds the segment files. Default: <Caddy data dir>/form_outbox/spool.
	Dir string `json:"dir,omitempty"`
	// Mode is "" (fallback: spool only when the store fails or is too slow), "always"
	// or "off".
	Mode string `json:"mode,omitempty"`
}

// Inbox is the JSON of the `form_outbox_inbox` handler (ParseInbox).
type Inbox struct {
	// Forms limits the inbox to these forms (default: every form).
	Forms []string `json:"forms,omitempty"`
	// Title heads every page.
	Title string `json:"title,omitempty"`
	// BasePath is the path prefix the inbox is served under (the Caddyfile derives it
	// from a matcher such as /inbox*).
	BasePath string `json:"base_path,omitempty"`
	// UserHeader names the header of the forward_auth auth server's 2xx answer that
	// holds the authenticated user (the one `copy_headers Remote-User` copies). The inbox
	// reads it from that answer, never from the client's request, so a client sending
	// the header itself gets nowhere. Used when basic_auth set no user.
	UserHeader string `json:"user_header,omitempty"`
	// ProtectedElsewhere serves requests no Caddy authentication handler vouched for,
	// recording actions as "operator" (or UserHeader's value as the request carries it,
	// which the proxy in front must set): for setups where a VPN or a proxy in front of
	// Caddy protects the inbox.
	ProtectedElsewhere bool `json:"protected_elsewhere,omitempty"`
}

// Feedback is the JSON of the `form_outbox_feedback` handler (ParseFeedback).
type Feedback struct {
	// SNS accepts SES event publishing through SNS.
	SNS *FeedbackSNSConfig `json:"sns,omitempty"`
	// Resend accepts Resend's Svix-signed webhooks.
	Resend *FeedbackResendConfig `json:"resend,omitempty"`
	// Suppress adds hard-bounced and complaining addresses to the suppression list, so
	// they are not sent to again. Default true.
	Suppress *bool `json:"suppress,omitempty"`
}

// FeedbackSNSConfig is the JSON twin of `sns { ... }`.
type FeedbackSNSConfig struct {
	// TopicARNs are the SNS topics accepted (required).
	TopicARNs []string `json:"topic_arns,omitempty"`
	// CertHost is the pattern (a Go regexp) the signing certificate's host must match.
	// Default ^sns\.[a-z0-9-]+\.amazonaws\.com$.
	CertHost string `json:"cert_host,omitempty"`
}

// FeedbackResendConfig is the JSON twin of `resend { ... }`.
type FeedbackResendConfig struct {
	// Secret is the webhook's signing secret (whsec_...); use a placeholder.
	Secret string `json:"secret,omitempty"`
}

// DefaultStorePath is the SQLite file used when `storage` names none, under Caddy's
// data directory (caddy.AppDataDir()).
func DefaultStorePath(appDataDir string) string {
	return filepath.Join(appDataDir, AppName, "outbox.db")
}

// MailDir is where the development file provider writes: `email { file DIR }`, else
// under Caddy's data directory.
func (a *App) MailDir(appDataDir string) string {
	if a.Email != nil && a.Email.File != nil && a.Email.File.Dir != "" {
		return a.Email.File.Dir
	}
	return filepath.Join(appDataDir, AppName, "mail")
}
