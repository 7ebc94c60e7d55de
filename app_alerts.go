package formoutbox

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
	"github.com/formoutbox/caddy-form-outbox/internal/telemetry"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/alert"
)

// alertState holds the owner alerts' targets, the channels the forms' routes use, and
// the evaluator Start runs (docs/operations.md, "Alerts").
type alertState struct {
	mu        sync.Mutex
	targets   []alert.Target
	channels  map[outbox.Channel]bool
	evaluator *alert.Evaluator
	open      []outbox.Alert // after the last pass: the metric, read at scrape time
}

// alertSources lists every source the evaluator polls (Start builds it, after every
// handler was provisioned). A part that raises alerts adds its outbox.AlertSource here,
// one line.
func (a *App) alertSources() []outbox.AlertSource {
	ac := a.alertsConfig()
	instance := a.instanceName()
	return []outbox.AlertSource{
		alert.DeadDeliveries(a.store),
		alert.StoreUnreachable(a.spoolState, instance, time.Duration(ac.StoreUnreachable)),
		alert.SpoolBacklog(a.spoolState, instance, time.Duration(ac.SpoolBacklog)),
		alert.FeedbackRate(a.store, ac.FeedbackRate, time.Duration(ac.FeedbackWindow), ac.FeedbackMin),
		a.LedgerAlertSource(),
		alert.Unrouted(a.store, 0),      // 0: alert.DefaultEventAlertWindow
		alert.TemplateEmpty(a.store, 0), // intake/templateempty.go writes its events
		outbox.AlertSourceFunc{SourceName: "backup", Func: a.backupConditions},
		outbox.ParkedAlerts(a.store),
		a.CanaryAlertSource(), // app_canary.go
	}
}

// noteChannels records the channels a form sends through (its routes, its autoreply),
// so Start can warn about a channel whose failures no alert target is independent of.
func (a *App) noteChannels(c *intake.Config) {
	a.alerts.mu.Lock()
	defer a.alerts.mu.Unlock()
	if a.alerts.channels == nil {
		a.alerts.channels = map[outbox.Channel]bool{}
	}
	for _, r := range c.Routes {
		a.alerts.channels[r.Channel] = true
	}
	if c.Autoreply != nil {
		a.alerts.channels[outbox.ChannelAutoreply] = true
	}
}

func (a *App) alertsConfig() caddyconf.AlertsConfig {
	if a.Alerts == nil {
		return caddyconf.AlertsConfig{}
	}
	return *a.Alerts
}

// provisionAlerts resolves the targets and registers their secrets (a webhook's signing
// key and headers, a Telegram bot) where the providers look them up, as a form's routes
// do (handler.go).
func (a *App) provisionAlerts() error {
	ac := a.alertsConfig()
	repl := caddy.NewReplacer()
	var targets []alert.Target
	for _, to := range ac.Email {
		if err := intake.CheckRecipient(to); err != nil {
			return fmt.Errorf("form_outbox: alerts: email: %w", err)
		}
		targets = append(targets, alert.Target{Channel: outbox.ChannelEmail, To: to})
	}
	routes := make([]intake.Route, len(ac.Notify))
	copy(routes, ac.Notify)
	resolveTelegramBots(repl, routes)
	for i := range routes {
		r := &routes[i]
		if r.Name == "" {
			r.Name = "alert-" + string(r.Channel)
		}
		t := alert.Target{Channel: r.Channel, ChatID: r.ChatID, URL: r.URL, MaxAttempts: r.MaxAttempts}
		if err := t.Check(); err != nil {
			return fmt.Errorf("form_outbox: %w", err)
		}
		if r.Channel == outbox.ChannelWebhook {
			if err := a.registry.RegisterWebhookSecret(r.URL, repl.ReplaceKnown(r.Secret, "")); err != nil {
				return fmt.Errorf("form_outbox: alerts: %w", err)
			}
			headers, err := resolveWebhookHeaders(repl, r.Headers)
			if err == nil {
				err = a.registry.RegisterWebhookHeaders(r.URL, headers)
			}
			if err != nil {
				return fmt.Errorf("form_outbox: alerts: %w", err)
			}
		}
		targets = append(targets, t)
	}
	if err := a.registry.RegisterTelegramBots(outbox.AlertsForm, routes); err != nil {
		return err
	}
	if err := a.registry.RegisterRates(outbox.AlertsForm, routes); err != nil {
		return err
	}
	a.alerts.targets = targets
	a.registerAlertMetric()
	return nil
}

// startAlerts starts the evaluator (unless `alerts off`) and warns, once, about every
// channel in use whose failures no target could be told about.
func (a *App) startAlerts() {
	ac := a.alertsConfig()
	if ac.Disabled {
		a.logger.Info("alerts off")
		return
	}
	a.warnUncovered()
	e := alert.New(alert.Config{
		Store:    a.store,
		Sources:  a.alertSources(),
		Targets:  a.alerts.targets,
		Instance: a.instanceName(),
		InboxURL: a.InboxURL,
		Interval: time.Duration(ac.Interval),
		Renotify: time.Duration(ac.Renotify),
		// A notice is due now: this worker, and on PostgreSQL the others (an instance with
		// `worker off` evaluates too), look for it at once.
		OnNotice: func() { a.worker.Broadcast(context.Background()) },
		OnPass:   a.alertPass,
		Logger:   a.logger.Named("alerts"),
	})
	a.alerts.mu.Lock()
	a.alerts.evaluator = e
	a.alerts.mu.Unlock()
	e.Start(a.ctx)
}

func (a *App) stopAlerts() {
	a.alerts.mu.Lock()
	e := a.alerts.evaluator
	a.alerts.mu.Unlock()
	if e != nil {
		e.Stop()
	}
}

func (a *App) warnUncovered() {
	a.alerts.mu.Lock()
	var used []outbox.Channel
	for ch := range a.alerts.channels {
		used = append(used, ch)
	}
	a.alerts.mu.Unlock()
	if len(a.alerts.targets) == 0 {
		a.logger.Warn("alerts have no target: they are shown in the inbox, the CLI and the admin API, and sent nowhere; add `alerts { email ... }` or a chat or webhook target")
		return
	}
	for _, ch := range alert.Uncovered(a.alerts.targets, used) {
		a.logger.Warn("alerts: no alert target is independent of this channel; an alert about its failures is shown but not sent (add a target of another channel)",
			zap.String("channel", string(ch)))
	}
}

// alertPass keeps what the last pass left open, for the metric.
func (a *App) alertPass(p alert.Pass) {
	a.alerts.mu.Lock()
	a.alerts.open = p.Open
	a.alerts.mu.Unlock()
}

// openAlerts is the open alerts as the last pass saw them.
func (a *App) openAlerts() []outbox.Alert {
	a.alerts.mu.Lock()
	defer a.alerts.mu.Unlock()
	return a.alerts.open
}

// ListAlerts reads the alerts from the store (admin API, CLI).
func (a *App) ListAlerts(ctx context.Context, resolved int) ([]outbox.Alert, error) {
	return a.store.ListAlerts(ctx, resolved)
}

// spoolState is this instance's spool as the spool sources read it.
func (a *App) spoolState() (entries int, oldest, failingSince time.Time, ok bool) {
	f := a.openSpool()
	if f == nil {
		return 0, time.Time{}, time.Time{}, false
	}
	st := f.Spool.Stats()
	return st.Entries, st.Oldest, f.FailingSince(), true
}

func (a *App) registerAlertMetric() {
	reg := a.ctx.GetMetricsRegistry()
	if reg == nil {
		return
	}
	if err := telemetry.RegisterOnce(reg, telemetry.AlertsGauge(a.openAlerts)); err != nil {
		a.logger.Warn("register alerts metric", zap.Error(err))
	}
}

// onDead is the worker's OnDead: the observer's count and event, and for an alert's own
// notice an error in the log and its own count instead of an alert (the delivery_dead
// source leaves the alerts' form out, so a dead notice never alerts about itself).
func (a *App) onDead(d outbox.Delivery) {
	a.observer().Dead(d)
	if !strings.HasPrefix(d.Route, "alert-") || a.store == nil {
		return
	}
	sub, err := a.store.GetSubmission(context.Background(), d.SubmissionID)
	if err != nil || sub.Form != outbox.AlertsForm {
		return
	}
	telemetry.AlertNoticeDead(d.Channel)
	a.logger.Error("an alert notice is dead: the owner was not told through this target; fix it and retry the delivery in the inbox",
		zap.String("delivery", d.ID.String()), zap.String("channel", string(d.Channel)))
}

// instanceName names this instance in the alerts of its in-process state: stable across
// restarts (a restarted instance resolves what it opened), distinct per spool directory
// (two instances on one host have two spools).
func (a *App) instanceName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	if a.spoolDir != "" {
		return host + ":" + a.spoolDir
	}
	return host
}

// backupConditions are the backup monitor's conditions (app_backup.go), none without
// `backup`: the monitor exists only once the shipper started.
func (a *App) backupConditions(ctx context.Context, now time.Time) ([]outbox.AlertCondition, error) {
	if src := a.BackupAlertSource(); src != nil {
		return src.Conditions(ctx, now)
	}
	return nil, nil
}
