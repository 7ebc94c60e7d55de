package outbox

import (
	"encoding/json"
	"strconv"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/internal/jsonw"
)

// Payload is the message a delivery will send, rendered at intake and stored with the
// delivery, so retries send exactly what was planned even after a config change. Secrets
// (webhook signing keys, API keys) are never part of it: they stay in the config.
type Payload struct {
	// Email; To is also a Telegram delivery's chat id. From is set for autoreplies only
	// (the operator's configured sender); empty: the provider's own.
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	ReplyTo string `json:"reply_to,omitempty"`
	Subject string `json:"subject,omitempty"`
	Text    string `json:"text,omitempty"`
	HTML    string `json:"html,omitempty"`
	// Attachments name the stored files an email carries (a route's `attach`); the
	// router reads their content from the store at send time (Router.Files).
	Attachments []AttachmentRef `json:"attachments,omitempty"`

	// Webhook, and the chat channels: Body is the exact request body; URL is the
	// Slack, Discord or Teams webhook.
	URL  string          `json:"url,omitempty"`
	Body json.RawMessage `json:"body,omitempty"` // valid, compact JSON (intake renders it)

	// Autoreply is read by the store when an autoreply delivery is inserted or released
	// (the window rule, docs/design.md "Autoreplies"); nil for every other channel.
	Autoreply *AutoreplyGate `json:"autoreply,omitempty"`
}

// AppendJSON appends p as JSON, as encoding/json.Marshal writes it (empty members left
// out), with Body copied as it is: intake renders it compact and HTML-escaped, which is
// what encoding/json would have made of it, without scanning it again.
func (p *Payload) AppendJSON(dst []byte) []byte {
	o := jsonw.NewObject(dst)
	o.StringOmitEmpty("from", p.From)
	o.StringOmitEmpty("to", p.To)
	o.StringOmitEmpty("reply_to", p.ReplyTo)
	o.StringOmitEmpty("subject", p.Subject)
	o.StringOmitEmpty("text", p.Text)
	o.StringOmitEmpty("html", p.HTML)
	if len(p.Attachments) > 0 {
		b, _ := json.Marshal(p.Attachments) // strings and numbers: cannot fail
		o.Raw("attachments", b)
	}
	o.StringOmitEmpty("url", p.URL)
	if len(p.Body) > 0 {
		o.Raw("body", p.Body)
	}
	if g := p.Autoreply; g != nil {
		v := o.Key("autoreply")
		a := jsonw.NewObject(*v)
		a.String("form", g.Form)
		a.String("key", g.Key)
		w := a.Key("window_seconds")
		*w = strconv.AppendInt(*w, g.WindowSeconds, 10)
		*v = a.Close()
	}
	return o.Close()
}

// AttachmentRef is one stored file an email attaches: its id in the files table, and
// the name and type it is sent with.
type AttachmentRef struct {
	FileID uuid.UUID `json:"file_id"`
	Name   string    `json:"name"`
	Type   string    `json:"type"`
	Size   int64     `json:"size"`
}
