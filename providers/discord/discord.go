// Package discord posts submissions to a Discord channel through an execute-webhook URL
// (with ?wait=true, so Discord answers with the message and its id). The webhook URL
// holds the webhook's token: it is never part of an error.
package discord

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// Config configures the Discord provider: a timeout and a client.
type Config = chat.Config

// Provider posts to Discord webhooks.
type Provider struct{ chat.Poster }

// New returns a Discord provider; it makes no request.
func New(cfg Config) *Provider { return &Provider{chat.NewPoster(cfg)} }

// Name implements providers.Provider.
func (p *Provider) Name() string { return "discord" }

// answer is what Discord answers: the message on success, an error object otherwise.
type answer struct {
	ID         string  `json:"id"`
	Code       int     `json:"code"`
	Message    string  `json:"message"`
	RetryAfter float64 `json:"retry_after"`
}

// codes names the JSON error codes an operator meets most.
var codes = map[int]string{
	10015: "unknown_webhook",
	50027: "invalid_webhook_token",
	50035: "invalid_form_body",
	50006: "empty_message",
}

// Send posts m.Body (rendered by Render) to the webhook m.URL with wait=true and
// records Discord's message id. 404 Unknown Webhook and every other 4xx are Permanent;
// 429 waits retry_after (or Retry-After); 5xx and network errors are Temporary; an
// unanswered request is Ambiguous (see chat.Refusal and chat.Post).
func (p *Provider) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	res := providers.Result{Provider: p.Name()}
	u, err := url.Parse(m.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return res, &providers.Error{Class: providers.Permanent, Code: "bad_url",
			Err: errors.New("discord webhook target is not an absolute http(s) URL")}
	}
	q := u.Query()
	q.Set("wait", "true")
	u.RawQuery = q.Encode()
	a, perr := p.Post(ctx, u.String(), m.Body, m.URL)
	if perr != nil {
		return res, perr
	}
	var ans answer
	_ = json.Unmarshal(a.Body, &ans) // an unreadable body leaves the zero answer: no id, no details
	if a.OK() {
		res.MessageID = ans.ID
		return res, nil
	}
	code := codes[ans.Code]
	if code == "" && ans.Code != 0 {
		code = "discord_" + strconv.Itoa(ans.Code)
	}
	return res, chat.Refusal(a, "discord", code, ans.Message, time.Duration(ans.RetryAfter*float64(time.Second)))
}

var _ providers.Provider = (*Provider)(nil)
