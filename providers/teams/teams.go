// Package teams posts submissions to a Microsoft Teams channel or chat through a
// Workflows (Power Automate) webhook, as an Adaptive Card. The webhook URL carries its
// signature (sig=...): it is the credential and never part of an error.
package teams

import (
	"encoding/json"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// Config configures the Teams provider: a timeout and a client.
type Config = chat.Config

// DefaultRate paces the posts to one Teams webhook. Microsoft gives no fixed number for
// workflow webhooks and says its limits change (Teams platform, "Optimize your bot with
// rate limiting"); its Graph guidance allows 2 channel messages a second per app and 4
// requests a second per channel, and its connector limits add caps per hour: one a
// second is the conservative pace. A route's `rate` overrides it.
const DefaultRate = "1/s"

// New returns a Teams provider; it makes no request. It posts m.Body (rendered by
// Render) to the webhook m.URL.
func New(cfg Config) *chat.Webhook {
	return &chat.Webhook{Poster: chat.NewPoster(cfg), Service: "teams", Read: read}
}

// read maps a Workflows answer: 202 Accepted has no message id; a refusal is
// {"error":{"code","message"}}: 400 (the card), 401 and 403 (the signature), 404 (the
// workflow is gone) are Permanent, 429 waits Retry-After, 5xx are Temporary.
func read(a chat.Answer) (string, *providers.Error) {
	if a.OK() {
		return "", nil
	}
	var ans struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(a.Body, &ans) // an unreadable body leaves no details; the status still counts
	return "", chat.Refusal(a, "teams", ans.Error.Code, ans.Error.Message, 0)
}
