package formoutbox

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/formoutbox/caddy-form-outbox/inbox"
	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
)

// InboxHandler is the `form_outbox_inbox` HTTP handler: the operator's inbox (inbox/)
// served by Caddy on the App's store. It fails closed: it serves only requests a Caddy
// authentication handler let through (basic_auth sets {http.auth.user.id}), or that
// carry the user header a forward_auth copied, unless the operator says the inbox is
// protected some other way. It answers every request itself.
type InboxHandler struct {
	// caddyconf.Inbox is the JSON config (internal/caddyconf/config.go), inline.
	caddyconf.Inbox

	inbox *inbox.Handler
}

// unprotectedMessage is the 403 answer of an inbox no authentication protects.
const unprotectedMessage = "This inbox answers only requests that a Caddy authentication handler let through. " +
	"Protect its paths with basic_auth (for example `basic_auth /inbox* { ops HASH }`, the hash from `caddy hash-password`) " +
	"or with forward_auth on every inbox path and the `user_header` option of form_outbox_inbox naming a header " +
	"of the auth server's answer (the one copy_headers copies); if something else protects it, " +
	"set `protected_elsewhere`.\n"

// CaddyModule returns the Caddy module information.
func (*InboxHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.form_outbox_inbox",
		New: func() caddy.Module { return new(InboxHandler) },
	}
}

// Provision finds (or loads) the App and builds the inbox on its store.
func (h *InboxHandler) Provision(ctx caddy.Context) error {
	appVal, err := ctx.App(AppName)
	if err != nil {
		return fmt.Errorf("form_outbox_inbox: %w", err)
	}
	app := appVal.(*App)
	ib, err := inbox.New(inbox.Config{
		Store:    app.store,
		BasePath: h.BasePath,
		Forms:    h.Forms,
		Title:    h.Title,
		Wake:     app.worker.Broadcast,
		Parker:   app.worker,
		Health: func(ctx context.Context) inbox.Health {
			hl := app.health(ctx)
			out := inbox.Health{Problems: hl.Problems}
			if hl.Spool != nil {
				out.SpoolOn, out.SpoolDepth = hl.Spool.Enabled, hl.Spool.Depth
			}
			if hl.Backup != nil {
				out.Backup = hl.Backup.Line() // internal/adminapi/backup.go
			}
			return out
		},
		Ledger: app.Ledger,
		Canary: app.canaryResults, // app_canary.go
		Logger: ctx.Logger(),
	})
	if err != nil {
		return fmt.Errorf("form_outbox_inbox: %w", err)
	}
	h.inbox = ib
	return nil
}

// ServeHTTP answers with the inbox for an authenticated user, or 403 saying how to
// protect it.
func (h *InboxHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	user := h.user(r)
	if user == "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusForbidden)
		_, err := w.Write([]byte(unprotectedMessage))
		return err
	}
	h.inbox.Serve(w, r, user)
	return nil
}

// user is who the request acts as: basic_auth's user id, else the user forward_auth's
// auth server answered with, else "operator" (or the header as sent) when the inbox is
// protected elsewhere, else nobody.
func (h *InboxHandler) user(r *http.Request) string {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl != nil {
		if id, _ := repl.GetString("http.auth.user.id"); id != "" {
			return id
		}
	}
	if h.UserHeader != "" && repl != nil {
		if v := forwardAuthUser(repl, h.UserHeader); v != "" {
			return v
		}
	}
	if h.ProtectedElsewhere {
		if h.UserHeader != "" {
			if v := strings.TrimSpace(r.Header.Get(h.UserHeader)); v != "" {
				return v
			}
		}
		return "operator"
	}
	return ""
}

// forwardAuthUser is the value of header name in the 2xx answer of the auth server a
// forward_auth in front of the inbox asked, or "" when no forward_auth let this request
// through. It reads the reverse proxy's response placeholders, which only a proxy's
// round trip sets, instead of the request header: a request header of that name may
// still be the client's own when forward_auth's matcher does not cover every inbox path
// (forward_auth /inbox/* leaves /inbox), when copy_headers names another header, or when
// no forward_auth is configured at all. forward_auth itself deletes the client's copy of
// each copy_headers header (modules/caddyhttp/reverseproxy/forwardauth/caddyfile.go in
// Caddy), so on a covered path the two agree; on any other path this check fails closed.
func forwardAuthUser(repl *caddy.Replacer, name string) string {
	code, _ := repl.Get("http.reverse_proxy.status_code")
	if c, ok := code.(int); !ok || c < 200 || c > 299 {
		return ""
	}
	v, _ := repl.GetString("http.reverse_proxy.header." + http.CanonicalHeaderKey(name))
	return strings.TrimSpace(v)
}

var (
	_ caddy.Provisioner           = (*InboxHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*InboxHandler)(nil)
)
