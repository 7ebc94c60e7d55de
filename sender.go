package formoutbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/senders"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
)

// buildSender wires the providers (internal/senders/sender.go) around the email provider
// this config asks for; the form handlers register webhook secrets and headers and the
// Telegram bots in a.registry (handler.go).
func (a *App) buildSender() (outbox.Sender, error) {
	email, err := a.emailProvider()
	if err != nil {
		return nil, fmt.Errorf("email: %w", err)
	}
	a.emailProviderName = email.Name()
	return senders.New(email, &a.registry, a.feedbackStore, a.fileStore)
}

// buildPacer paces the worker's sends (docs/design.md, "Pacing"): e-mail at the rate of
// the first provider of the email chain, webhook and chat routes at the rates their
// handlers register in a.registry.
func (a *App) buildPacer() (*senders.Pacer, error) {
	rate, err := senders.EmailRate(a.emailConfig())
	if err != nil {
		return nil, fmt.Errorf("email: %w", err)
	}
	return &senders.Pacer{Email: rate, Registry: &a.registry}, nil
}

// emailProvider resolves the placeholders of the email config and builds its provider
// (internal/senders/email.go). Secrets are resolved into the provider and never written
// back to the config (internal/caddyconf/email.go).
func (a *App) emailProvider() (providers.Provider, error) {
	cfg := a.emailConfig()
	// a.ctx is a caddy.Context struct: converted to an interface it is never nil, so the
	// check is on the context it embeds (unset when an App is built by hand).
	ctx := context.Context(a.ctx)
	if a.ctx.Context == nil {
		ctx = context.Background()
	}
	return senders.NewEmail(ctx, cfg)
}

// emailConfig is the email config with its placeholders resolved.
func (a *App) emailConfig() senders.Email {
	repl := caddy.NewReplacer()
	return a.Email.Resolved(a.from, a.mailDir, func(s string) string { return repl.ReplaceKnown(s, "") })
}

// resolveTelegramBots resolves the placeholders of the Telegram routes' tokens and
// endpoints into the routes, before intake checks them; like webhook secrets they are
// never written back to the config the user sees.
func resolveTelegramBots(repl *caddy.Replacer, routes []intake.Route) {
	for i := range routes {
		r := &routes[i]
		r.Token = strings.TrimSpace(repl.ReplaceKnown(r.Token, ""))
		r.Endpoint = strings.TrimSpace(repl.ReplaceKnown(r.Endpoint, ""))
	}
}
