package formoutbox

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Handler is the `form_outbox` HTTP handler: it turns a POST into a stored submission and
// answers only after the store committed it. Its JSON is intake.Config's, inline.
type Handler struct {
	intake.Config

	app    *App
	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (*Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.form_outbox",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision finds (or loads, with defaults) the App, resolves secret placeholders,
// validates the form config and registers the form's webhook secrets with the App.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	appVal, err := ctx.App(AppName)
	if err != nil {
		return fmt.Errorf("form_outbox: %w", err)
	}
	h.app = appVal.(*App)

	h.IPHashKey = h.app.ipHashKey
	h.SpamKey = h.app.spamKey
	// Both stores record used spam tokens; a store that does not leaves reuse unchecked.
	h.Tokens, _ = h.app.store.(outbox.TokenLedger)
	h.InboxURL = h.app.InboxURL
	h.FileURL = h.app.fileURL()
	h.ClientIP = caddyClientIP
	h.EmailAttempts, h.WebhookAttempts = h.app.Attempts()
	h.Ledger = ledgerAnswers{h.app.ledger.counter}

	repl := caddy.NewReplacer()
	for i := range h.Routes {
		r := &h.Routes[i]
		r.Secret = repl.ReplaceKnown(r.Secret, "")
		if caddyconf.ChatURLIsCredential(r.Channel) {
			// The URL is the credential: {env.X} keeps it out of the config Caddy logs.
			r.URL = strings.TrimSpace(repl.ReplaceKnown(r.URL, ""))
		}
	}
	resolveTelegramBots(repl, h.Routes)
	if h.Captcha != nil {
		h.Captcha.Secret = repl.ReplaceKnown(h.Captcha.Secret, "")
	}
	if err := h.Config.CheckRouted(); err != nil { // JSON configs: the Caddyfile checked it at its line
		return fmt.Errorf("form_outbox: %w", err)
	}
	if err := h.Config.Provision(); err != nil {
		return fmt.Errorf("form_outbox: %w", err)
	}
	for _, w := range h.Config.Warnings() {
		h.logger.Warn(w, zap.String("form", h.Form))
	}
	if err := h.app.registry.RegisterTelegramBots(h.Form, h.Routes); err != nil {
		return err
	}
	h.app.registerLedgerForm(h.Form, h.DeliversEveryPost())
	if err := h.app.registerDigests(h.DigestRoutes()); err != nil {
		return err
	}
	h.app.noteChannels(&h.Config)
	if err := h.app.registerCanary(&h.Config); err != nil {
		return err
	}
	if err := h.app.registry.RegisterRates(h.Form, h.Routes); err != nil {
		return err
	}
	for _, r := range h.Routes {
		if r.Channel != outbox.ChannelWebhook {
			continue
		}
		if err := h.app.registry.RegisterWebhookSecret(r.URL, r.Secret); err != nil {
			return fmt.Errorf("form_outbox: form %s: %w", h.Form, err)
		}
		headers, err := resolveWebhookHeaders(repl, r.Headers)
		if err == nil {
			err = h.app.registry.RegisterWebhookHeaders(r.URL, headers)
		}
		if err != nil {
			return fmt.Errorf("form_outbox: form %s: %w", h.Form, err)
		}
	}
	return nil
}

// caddyClientIP is Caddy's client address, which honours trusted_proxies: a spoofed
// X-Forwarded-For from a peer outside trusted_proxies is ignored, so rate limits and the
// stored client hash follow the real peer.
func caddyClientIP(r *http.Request) string {
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	return ip
}

// ServeHTTP hands the request to intake (intake/serve.go), which answers the form's POST,
// its CORS preflight and the browser client script, with the App's Acceptor keeping each
// submission; every other request goes to the next handler, so a GET of the form's own
// path can serve the page.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if h.Serve(w, r, h.app.acceptor, h.logger) {
		return nil
	}
	return next.ServeHTTP(w, r)
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
