package formoutbox

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/feedback"
)

// FeedbackHandler is the `form_outbox_feedback` HTTP handler: it receives what SES (via
// an SNS HTTPS subscription) and Resend (webhooks) report after accepting an email, and
// records it against the delivery (outbox/feedback does the work). It answers every
// request itself.
type FeedbackHandler struct {
	// caddyconf.Feedback is the JSON config (internal/caddyconf/config.go), inline.
	caddyconf.Feedback

	receiver *feedback.Receiver
}

// CaddyModule returns the Caddy module information.
func (*FeedbackHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.form_outbox_feedback",
		New: func() caddy.Module { return new(FeedbackHandler) },
	}
}

// Provision finds (or loads) the App and builds the receiver on its store.
func (h *FeedbackHandler) Provision(ctx caddy.Context) error {
	appVal, err := ctx.App(AppName)
	if err != nil {
		return fmt.Errorf("form_outbox_feedback: %w", err)
	}
	app := appVal.(*App)
	repl := caddy.NewReplacer()
	cfg := feedback.Config{
		Store:      app.store,
		Suppress:   h.Suppress == nil || *h.Suppress,
		OnRecorded: app.observer().Feedback,
		Logger:     ctx.Logger(),
	}
	if s := h.SNS; s != nil {
		sc := &feedback.SNSConfig{}
		for _, arn := range s.TopicARNs {
			sc.TopicARNs = append(sc.TopicARNs, strings.TrimSpace(repl.ReplaceKnown(arn, "")))
		}
		if s.CertHost != "" {
			re, err := regexp.Compile(s.CertHost)
			if err != nil {
				return fmt.Errorf("form_outbox_feedback: sns cert_host: %w", err)
			}
			sc.CertHost = re
		}
		cfg.SNS = sc
	}
	if r := h.Resend; r != nil {
		// Resolved into the receiver only: the running config keeps the placeholder.
		cfg.Resend = &feedback.ResendConfig{Secret: strings.TrimSpace(repl.ReplaceKnown(r.Secret, ""))}
	}
	h.receiver, err = feedback.New(cfg)
	if err != nil {
		return fmt.Errorf("form_outbox_feedback: %w", err)
	}
	return nil
}

// ServeHTTP answers the feedback request; nothing runs after it.
func (h *FeedbackHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	h.receiver.ServeHTTP(w, r)
	return nil
}

// feedbackStore is the App's store seen as a feedback store, nil while no store is open.
func (a *App) feedbackStore() outbox.FeedbackStore {
	if a.store == nil {
		return nil
	}
	return a.store
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*FeedbackHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*FeedbackHandler)(nil)
)
