// Package slack posts submissions to a Slack channel through an incoming webhook. The
// webhook URL is the credential: it is never part of an error.
package slack

import (
	"regexp"
	"strings"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// Config configures the Slack provider: a timeout and a client.
type Config = chat.Config

// DefaultRate paces the posts to one incoming webhook: Slack allows about one message a
// second per webhook (its rate-limits documentation); a route's `rate` overrides it.
const DefaultRate = "1/s"

// New returns a Slack provider; it makes no request. It posts m.Body (rendered by
// Render) to the webhook m.URL.
func New(cfg Config) *chat.Webhook {
	return &chat.Webhook{Poster: chat.NewPoster(cfg), Service: "slack", Read: read}
}

// errorCode is the shape of Slack's plain-text error answers ("invalid_payload",
// "channel_is_archived"); anything else in a body is not quoted into the history.
var errorCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// read maps Slack's answer: "ok" has no message id; 400 invalid_payload, 403, 404
// no_service or channel_not_found and 410 channel_is_archived are Permanent, 429 waits
// Retry-After (see chat.Refusal).
func read(a chat.Answer) (string, *providers.Error) {
	if a.OK() {
		return "", nil
	}
	code := strings.TrimSpace(string(a.Body))
	if !errorCode.MatchString(code) {
		code = ""
	}
	return "", chat.Refusal(a, "slack", code, code, 0)
}
