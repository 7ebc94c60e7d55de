package outbox

import "encoding/json"

// Payload is the message a delivery will send, rendered at intake and stored with the
// delivery, so retries send exactly what was planned even after a config change. Secrets
// (webhook signing keys, API keys) are never part of it: they stay in the config.
type Payload struct {
	// Email.
	To      string `json:"to,omitempty"`
	ReplyTo string `json:"reply_to,omitempty"`
	Subject string `json:"subject,omitempty"`
	Text    string `json:"text,omitempty"`
	HTML    string `json:"html,omitempty"`

	// Webhook.
	URL  string          `json:"url,omitempty"`
	Body json.RawMessage `json:"body,omitempty"`
}
