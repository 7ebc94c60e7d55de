// Package doctor is what `caddy form-outbox check` asks before a site goes live
// (docs/operations.md, "Before going live: form-outbox check"): can the store be reached
// and how far is it migrated, and would every route of every form get its message out.
// Each provider is asked its side-effect-free question (providers.Prober,
// providers.ProbeURL, telegram.Probe); nothing is sent, posted or written. It knows
// nothing of Caddy: the command (internal/command/check.go) loads the config, resolves
// its placeholders and hands the result here.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/senders"
	"github.com/formoutbox/caddy-form-outbox/internal/storage"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/telegram"
)

// DefaultTimeout bounds each probe.
const DefaultTimeout = 10 * time.Second

// Input is the resolved configuration to check: placeholders replaced, defaults applied.
type Input struct {
	Store storage.Config
	Email senders.Email
	// Forms are the form handlers' configurations as loaded (not provisioned).
	Forms []intake.Config
	// AlertEmail and AlertRoutes are the owner alerts' targets (the global `alerts`
	// block): an alert that cannot go out is a notification dropped too.
	AlertEmail  bool
	AlertRoutes []intake.Route
	// Timeout bounds each probe; 0 is DefaultTimeout.
	Timeout time.Duration
}

// Line is one line of the report: what was checked, and "" when it is ready or what is
// wrong. Never a secret: errors name hosts, routes and providers.
type Line struct {
	Subject string
	Problem string
}

// String is the line as printed: "SUBJECT: ready" or "SUBJECT: PROBLEM".
func (l Line) String() string {
	if l.Problem == "" {
		return l.Subject + ": ready"
	}
	return l.Subject + ": " + l.Problem
}

// Check asks the store, then every route of every form, then the owner alerts' targets,
// and returns one line for the store, one per route (a store_only form gets one line
// saying so) and one per alert target. ok is true when every line is ready.
func Check(ctx context.Context, in Input) (lines []Line, ok bool) {
	timeout := in.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	probe := func(f func(ctx context.Context) error) string {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := f(ctx); err != nil {
			return err.Error()
		}
		return ""
	}
	lines = append(lines, checkStore(ctx, in.Store, timeout))
	// routeProblem asks a webhook or chat route's provider; e-mail has its own, shared.
	var emailProblem func() string
	routeProblem := func(r intake.Route) string {
		switch r.Channel {
		case outbox.ChannelEmail:
			return emailProblem()
		case outbox.ChannelWebhook, outbox.ChannelSlack, outbox.ChannelDiscord, outbox.ChannelTeams:
			return probe(func(ctx context.Context) error { return providers.ProbeURL(ctx, r.URL) })
		case outbox.ChannelTelegram:
			return probe(func(ctx context.Context) error {
				return telegram.Probe(ctx, telegram.Bot{Token: r.Token, Endpoint: r.Endpoint}, r.ChatID)
			})
		}
		return fmt.Sprintf("unknown channel %q", r.Channel)
	}

	// The e-mail providers are shared by every e-mail route and the autoreplies: asked
	// once, the answer repeated on each route's line.
	var email *string
	emailProblem = func() string {
		if email == nil {
			s := probe(func(ctx context.Context) error { return probeEmail(ctx, in.Email) })
			email = &s
		}
		return *email
	}
	for _, form := range in.Forms {
		if len(form.Routes) == 0 {
			lines = append(lines, Line{Subject: "form " + form.Form, Problem: storeOnlyProblem(form)})
			continue
		}
		form.Routes = append([]intake.Route(nil), form.Routes...) // named on a copy
		if err := form.NameRoutes(); err != nil {
			lines = append(lines, Line{Subject: "form " + form.Form, Problem: err.Error()})
			continue
		}
		for _, r := range form.Routes {
			lines = append(lines, Line{Subject: fmt.Sprintf("form %s route %s", form.Form, r.Name), Problem: routeProblem(r)})
		}
		if form.Autoreply != nil {
			lines = append(lines, Line{Subject: fmt.Sprintf("form %s route %s", form.Form, intake.AutoreplyRoute), Problem: emailProblem()})
		}
	}
	if in.AlertEmail {
		lines = append(lines, Line{Subject: "alerts target email", Problem: emailProblem()})
	}
	targets := intake.Config{Routes: append([]intake.Route(nil), in.AlertRoutes...)}
	if err := targets.NameRoutes(); err != nil {
		lines = append(lines, Line{Subject: "alerts", Problem: err.Error()})
		targets.Routes = nil
	}
	for _, r := range targets.Routes {
		lines = append(lines, Line{Subject: "alerts target " + r.Name, Problem: routeProblem(r)})
	}
	ok = true
	for _, l := range lines {
		ok = ok && l.Problem == ""
	}
	return lines, ok
}

// storeOnlyProblem is a routeless form's line: ready when it says store_only (the
// Caddyfile refuses it otherwise; a JSON config may not).
func storeOnlyProblem(form intake.Config) string {
	if form.StoreOnly {
		return ""
	}
	return "no route: nobody is notified of its posts (add a notify route, or store_only)"
}

// checkStore opens the store (as Caddy does at start, which applies migrations this
// build has and the database lacks), pings it and reports its migration level.
func checkStore(ctx context.Context, c storage.Config, timeout time.Duration) Line {
	l := Line{Subject: "store " + c.Describe()}
	store, err := storage.Open(c)
	if err != nil {
		l.Problem = err.Error()
		return l
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := store.Ping(ctx); err != nil {
		l.Problem = "unreachable: " + storage.Explain(store, err)
		return l
	}
	mr, ok := store.(outbox.MigrationReporter)
	if !ok {
		return l
	}
	lv, err := mr.MigrationLevel(ctx)
	switch {
	case err != nil:
		l.Problem = err.Error()
	case lv.Applied > lv.Known:
		l.Problem = fmt.Sprintf("migration %d, newer than this build knows (%d): run the newer build", lv.Applied, lv.Known)
	case lv.Applied < lv.Known:
		l.Problem = fmt.Sprintf("migration %d of %d: not migrated", lv.Applied, lv.Known)
	default:
		l.Subject += fmt.Sprintf(" (migration %d)", lv.Applied)
	}
	return l
}

// probeEmail asks every configured e-mail provider; with none but the development file
// provider there is nothing to ask.
func probeEmail(ctx context.Context, c senders.Email) error {
	ps, err := senders.EmailProbers(ctx, c)
	if err != nil {
		return fmt.Errorf("e-mail: %w", err)
	}
	var errs []string
	for _, p := range ps {
		if err := p.Probe(ctx); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", p.Name, err))
		}
	}
	if len(errs) > 0 {
		return errors.New("e-mail provider " + strings.Join(errs, "; "))
	}
	return nil
}
