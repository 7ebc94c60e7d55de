// Package providers sends messages: email through SES, Resend, SMTP or the development
// file provider, and signed webhooks. It is the leaf of the import graph and knows nothing of
// Caddy or of the outbox tables.
package providers

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Message is one notification to send. ID is the delivery id, used as the idempotency
// key on every retry (Resend Idempotency-Key, webhook-id, SES email tag).
type Message struct {
	ID      string
	Channel string // "email" or "webhook"

	// Email. From, when set, replaces the provider's configured sender for this
	// message (an autoreply's sender, from the operator's config, never from a visitor);
	// empty: the configured one.
	From    string
	To      string
	ReplyTo string
	Subject string
	Text    string
	HTML    string
	// Attachments are files sent with the email (a route's `attach`): SES then sends raw
	// MIME, Resend its attachments, SMTP and file a multipart/mixed message.
	Attachments []Attachment

	// Webhook.
	URL  string
	Body []byte
}

// Attachment is one file of an email. Name is already sanitised (intake/upload.go).
type Attachment struct {
	Name        string
	ContentType string
	Content     []byte
}

// Result is what a provider reports for a sent message.
type Result struct {
	Provider  string
	MessageID string
	// BodySHA256 is the hex SHA-256 of the request body sent, for a message that has
	// one (webhook and chat post Message.Body as it is). outbox.Router fills it, so each
	// provider need not; the attempt row keeps it.
	BodySHA256 string
}

// Provider sends one message. Errors it returns should be *Error so the worker can tell
// temporary from permanent from ambiguous; any other error counts as temporary.
type Provider interface {
	Name() string
	Send(ctx context.Context, m Message) (Result, error)
}

// Class says what a failed send means for the outbox.
type Class int

const (
	Temporary Class = iota // retry later (may carry RetryAfter)
	Permanent              // no retry, no failover: the delivery is dead
	Ambiguous              // the request was written but no answer came: may have been sent
)

func (c Class) String() string {
	switch c {
	case Permanent:
		return "permanent"
	case Ambiguous:
		return "ambiguous"
	default:
		return "temporary"
	}
}

// Error is a classified send failure.
type Error struct {
	Class      Class
	Failover   bool          // the next provider in a chain may be tried
	RetryAfter time.Duration // provider asked to wait at least this long; 0 = no opinion
	HTTPStatus int
	Code       string // provider error code, e.g. "Throttling"
	// Destination says the failure is the destination's, not the message's: every message
	// to it would fail the same way until an operator acts (a webhook that answers 404 or
	// 410, a chat that removed the bot, a revoked API key). With Class Permanent the
	// outbox parks the destination at once instead of burning every lead to dead
	// (docs/operations.md, "Parked destinations"); a recipient's bounce is never one.
	Destination bool
	Err         error
}

func (e *Error) Error() string {
	msg := e.Class.String()
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.HTTPStatus != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.HTTPStatus)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// DestinationStatus reports whether an HTTP refusal of a webhook or chat service is the
// destination's rather than the message's (Error.Destination): unauthorised or forbidden
// (a revoked token, a removed bot), not found or gone (a deleted endpoint or channel).
func DestinationStatus(status int) bool {
	switch status {
	case 401, 403, 404, 410:
		return true
	}
	return false
}

// Classify returns the classified form of err: err itself when it is (or wraps) an
// *Error, otherwise a Temporary error without failover.
func Classify(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return &Error{Class: Temporary, Err: err}
}
