// Package discord posts submissions to a Discord channel through an execute-webhook URL
// (with ?wait=true, so Discord answers with the message and its id). The webhook URL
// holds the webhook's token: it is never part of an error.
package discord

import (
	"encoding/json"
	"net/url"
	"strconv"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// Config configures the Discord provider: a timeout and a client.
type Config = chat.Config

// DefaultRate paces the posts to one webhook: Discord lets a webhook take about 5
// requests every 2 seconds; 2/s stays under that with room for a retry. A route's `rate`
// overrides it.
const DefaultRate = "2/s"

// New returns a Discord provider; it makes no request. It posts m.Body (rendered by
// Render) to the webhook m.URL with wait=true, so Discord answers with the message.
func New(cfg Config) *chat.Webhook {
	return &chat.Webhook{Poster: chat.NewPoster(cfg), Service: "discord", Read: read, Target: func(u *url.URL) {
		q := u.Query()
		q.Set("wait", "true")
		u.RawQuery = q.Encode()
	}}
}

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

// read maps Discord's answer: the message id on success; 404 Unknown Webhook and every
// other 4xx are Permanent, 429 waits retry_after (or Retry-After), 5xx are Temporary
// (see chat.Refusal).
func read(a chat.Answer) (string, *providers.Error) {
	var ans answer
	_ = json.Unmarshal(a.Body, &ans) // an unreadable body leaves the zero answer: no id, no details
	if a.OK() {
		return ans.ID, nil
	}
	code := codes[ans.Code]
	if code == "" && ans.Code != 0 {
		code = "discord_" + strconv.Itoa(ans.Code)
	}
	return "", chat.Refusal(a, "discord", code, ans.Message, time.Duration(ans.RetryAfter*float64(time.Second)))
}
