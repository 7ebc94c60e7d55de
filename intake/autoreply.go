package intake

import (
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
)

// DefaultAutoreplyWindow is how long an address waits for its next autoreply from one
// form when the operator sets no window.
const DefaultAutoreplyWindow = 24 * time.Hour

// AutoreplyRoute is the route name of every autoreply delivery.
const AutoreplyRoute = "autoreply"

// Autoreply is a form's confirmation e-mail to the visitor (docs/design.md,
// "Autoreplies"): sent to the visitor's validated address (the one Reply-To takes,
// see replyTo) of an accepted submission, at most once per address and Window (the
// store keeps that rule). Everything else in it is the operator's: the sender, the
// subject and the bodies; the visitor's fields reach it only where a template prints
// them.
type Autoreply struct {
	// From is the sender, e.g. "Example Ltd <hello@example.com>"; it must be one the
	// e-mail providers may send as.
	From string `json:"from"`
	// Subject is the subject; {field.NAME} is replaced by that field, on one line.
	Subject string `json:"subject"`
	// BodyText and BodyHTML are template files over TemplateData (without Link: the
	// inbox is not the visitor's). BodyText is required: a plain part is always sent.
	BodyText string `json:"body_text"`
	BodyHTML string `json:"body_html,omitempty"`
	// Window is how long one address gets no other reply from this form; default 24h,
	// at least one minute.
	Window Duration `json:"window,omitempty"`
	// MaxAttempts overrides the e-mail retry budget; 0: the App's.
	MaxAttempts int `json:"max_attempts,omitempty"`

	route Route // the subject and templates, parsed, as an email route's
}

// provision checks the autoreply's options and parses its templates.
func (a *Autoreply) provision() error {
	if a.Window == 0 {
		a.Window = Duration(DefaultAutoreplyWindow)
	}
	if time.Duration(a.Window) < time.Minute {
		return fmt.Errorf("autoreply: window %s: want at least 1m", time.Duration(a.Window))
	}
	if a.MaxAttempts < 0 {
		return fmt.Errorf("autoreply: max_attempts must not be negative")
	}
	if err := CheckSender(a.From); err != nil {
		return fmt.Errorf("autoreply: from %q: %w", a.From, err)
	}
	if strings.TrimSpace(a.Subject) == "" || hasControl(a.Subject) {
		return fmt.Errorf("autoreply: subject must be one line of text")
	}
	if a.BodyText == "" {
		return fmt.Errorf("autoreply: body_text is required (the plain-text part every reply has)")
	}
	a.route = Route{Name: AutoreplyRoute, Channel: outbox.ChannelEmail, Subject: a.Subject,
		BodyText: a.BodyText, BodyHTML: a.BodyHTML}
	if err := a.route.parseTemplates(); err != nil {
		return fmt.Errorf("autoreply: %w", err)
	}
	a.route.printed = a.route.renderedReferences()
	return nil
}

// CheckSender accepts an autoreply sender: one address, with or without a display
// name, that the header rules (providers/headers.go) let through.
func CheckSender(from string) error {
	if perr := providers.CheckHeaders(providers.Message{From: from}); perr != nil {
		return perr
	}
	a, err := mail.ParseAddress(from)
	if err != nil {
		return err
	}
	if _, ok := providers.ReplyToHeader(a.Address); !ok {
		return fmt.Errorf("the address must have an ASCII local part")
	}
	return nil
}

// planAutoreply adds the visitor's reply to out: for an accepted submission pending,
// for a held-back one skipped (a release makes it due, and the store then applies the
// window), never for a test submission, without a valid address or to an address whose
// domain is not public (publicRecipient; an autoreply.skipped event says so). address is the
// visitor's validated address (replyTo). A body template that fails on this submission
// drops the reply and records a template.failed event: there is no built-in reply.
func (c *Config) planAutoreply(out []outbox.Delivery, sub *outbox.Submission, address string, now time.Time) ([]outbox.Delivery, error) {
	a := c.Autoreply
	if a == nil || sub.Test || address == "" {
		return out, nil
	}
	to, ok := providers.ReplyToHeader(address)
	if !ok {
		return out, nil // a non-ASCII local part: no provider path can send to it
	}
	if !publicRecipient(to) {
		return out, markAutoreplySkipped(sub, ReasonRecipientNotPublic, now)
	}
	view := shownSubmission(sub) // no bidi controls in what the visitor reads (bidi.go)
	text, html, failed := a.route.renderBodies(TemplateData{Form: c.Form, ID: sub.ID.String(),
		Received: sub.CreatedAt, Fields: view.Data}, "", "")
	for _, f := range failed {
		if err := markTemplateFailed(sub, f, now); err != nil {
			return nil, err
		}
	}
	if len(failed) > 0 {
		return out, nil
	}
	p := outbox.Payload{From: a.From, To: to, Subject: c.subject(a.route, view.Data, specials{}), Text: text, HTML: html,
		Autoreply: &outbox.AutoreplyGate{Form: c.Form, Key: outbox.AutoreplyKey(to),
			WindowSeconds: int64(time.Duration(a.Window) / time.Second)}}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("plan autoreply: delivery id: %w", err)
	}
	status := outbox.DeliveryPending
	if sub.Status != outbox.SubmissionAccepted {
		status = outbox.DeliverySkipped
	}
	attempts := a.MaxAttempts
	if attempts == 0 {
		attempts = c.maxAttempts(Route{Channel: outbox.ChannelAutoreply})
	}
	d := outbox.Delivery{
		ID:            id,
		SubmissionID:  sub.ID,
		Route:         AutoreplyRoute,
		Channel:       outbox.ChannelAutoreply,
		Recipient:     outbox.NormalizeAddress(to),
		Status:        status,
		MaxAttempts:   attempts,
		NextAttemptAt: now,
		Payload:       p.AppendJSON(nil),
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	if err := c.markTemplateEmpty(sub, &a.route, []outbox.Delivery{d}, now); err != nil { // templateempty.go
		return nil, err
	}
	return append(out, d), nil
}
