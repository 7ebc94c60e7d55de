// Package slack posts submissions to a Slack channel through an incoming webhook. The
// webhook URL is the credential: it is never part of an error.
package slack

import (
	"context"
	"regexp"
	"strings"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// Config configures the Slack provider: a timeout and a client.
type Config = chat.Config

// Provider posts to Slack webhooks.
type Provider struct{ chat.Poster }

// New returns a Slack provider; it makes no request.
func New(cfg Config) *Provider { return &Provider{chat.NewPoster(cfg)} }

// Name implements providers.Provider.
func (p *Provider) Name() string { return "slack" }

// errorCode is the shape of Slack's plain-text error answers ("invalid_payload",
// "channel_is_archived"); anything else in a body is not quoted into the history.
var errorCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// Send posts m.Body (rendered by Render) to the webhook m.URL. Slack answers "ok" with
// no message id; 400 invalid_payload, 403, 404 no_service or channel_not_found and 410
// channel_is_archived are Permanent, 429 waits Retry-After (see chat.Refusal).
func (p *Provider) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	res := providers.Result{Provider: p.Name()}
	a, perr := p.Post(ctx, m.URL, m.Body, m.URL)
	if perr != nil {
		return res, perr
	}
	if a.OK() {
		return res, nil
	}
	code := strings.TrimSpace(string(a.Body))
	if !errorCode.MatchString(code) {
		code = ""
	}
	return res, chat.Refusal(a, "slack", code, code, 0)
}

var _ providers.Provider = (*Provider)(nil)
