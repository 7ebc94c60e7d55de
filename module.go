package formoutbox

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
)

// AppName is the App's module ID and the name of the global option that configures it.
const AppName = caddyconf.AppName

// The modules and their Caddyfile words. The grammar is internal/caddyconf's; each
// UnmarshalCaddyfile below only hands it the module's config.
func init() {
	caddy.RegisterModule(new(App))
	caddy.RegisterModule(new(Handler))
	caddy.RegisterModule(new(InboxHandler))
	caddy.RegisterModule(new(FeedbackHandler))
	caddy.RegisterModule(AdminAPI{})

	httpcaddyfile.RegisterGlobalOption(AppName, parseGlobalOption)
	// The handlers answer their requests themselves (a form handler passes on all but
	// its POST), so they belong before respond/file_server; registering the order spares
	// users an `order` line. Each lands just before respond, so the handler order is
	// form_outbox_feedback, form_outbox_inbox, form_outbox.
	httpcaddyfile.RegisterHandlerDirective("form_outbox_feedback", parseFeedbackDirective)
	httpcaddyfile.RegisterDirectiveOrder("form_outbox_feedback", httpcaddyfile.Before, "respond")
	httpcaddyfile.RegisterDirective("form_outbox_inbox", parseInboxDirective)
	httpcaddyfile.RegisterDirectiveOrder("form_outbox_inbox", httpcaddyfile.Before, "respond")
	httpcaddyfile.RegisterDirective(AppName, parseDirective)
	httpcaddyfile.RegisterDirectiveOrder(AppName, httpcaddyfile.Before, "respond")
}

// parseGlobalOption sets up the App from the `form_outbox` global option block
// (caddyconf.ParseApp has the syntax).
func parseGlobalOption(d *caddyfile.Dispenser, existing any) (any, error) {
	if existing != nil {
		return nil, d.Err("the form_outbox global option may appear only once")
	}
	app := new(App)
	if err := app.UnmarshalCaddyfile(d); err != nil {
		return nil, err
	}
	caddyconf.WarnLiteralSecrets(d, caddy.Log())
	return httpcaddyfile.App{Name: AppName, Value: caddyconfig.JSON(app, nil)}, nil
}

// UnmarshalCaddyfile reads the global option block (caddyconf.ParseApp).
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyconf.ParseApp(d, &a.App)
}

// parseDirective sets up a form handler from the `form_outbox` directive
// (caddyconf.ParseFormDirective has the syntax). It is a RegisterDirective because the
// matcher names the form.
func parseDirective(h httpcaddyfile.Helper) ([]httpcaddyfile.ConfigValue, error) {
	handler := new(Handler)
	matcherSet, err := caddyconf.ParseFormDirective(h, &handler.Config)
	if err != nil {
		return nil, err
	}
	caddyconf.WarnLiteralSecrets(h.Dispenser, caddy.Log())
	return h.NewRoute(matcherSet, handler), nil
}

// UnmarshalCaddyfile reads the directive's block (caddyconf.ParseForm).
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyconf.ParseForm(d, &h.Config)
}

// parseInboxDirective sets up the inbox from `form_outbox_inbox` (caddyconf.ParseInboxDirective);
// the matcher gives its base path.
func parseInboxDirective(h httpcaddyfile.Helper) ([]httpcaddyfile.ConfigValue, error) {
	ih := new(InboxHandler)
	matcherSet, err := caddyconf.ParseInboxDirective(h, &ih.Inbox)
	if err != nil {
		return nil, err
	}
	return h.NewRoute(matcherSet, ih), nil
}

// UnmarshalCaddyfile reads the directive's block (caddyconf.ParseInbox).
func (ih *InboxHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyconf.ParseInbox(d, &ih.Inbox)
}

func parseFeedbackDirective(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	fh := new(FeedbackHandler)
	if err := fh.UnmarshalCaddyfile(h.Dispenser); err != nil {
		return nil, err
	}
	caddyconf.WarnLiteralSecrets(h.Dispenser, caddy.Log())
	return fh, nil
}

// UnmarshalCaddyfile reads the directive's block (caddyconf.ParseFeedback).
func (fh *FeedbackHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return caddyconf.ParseFeedback(d, &fh.Feedback)
}

// Interface guards.
var (
	_ caddyfile.Unmarshaler = (*App)(nil)
	_ caddyfile.Unmarshaler = (*Handler)(nil)
	_ caddyfile.Unmarshaler = (*InboxHandler)(nil)
	_ caddyfile.Unmarshaler = (*FeedbackHandler)(nil)
)
