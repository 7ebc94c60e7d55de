package outbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/internal/jsonw"
)

// SubmissionStatus is what intake decided about a submission. Every request that reaches
// the store ends as one of these; nothing is dropped silently.
type SubmissionStatus string

const (
	SubmissionAccepted    SubmissionStatus = "accepted"
	SubmissionSpam        SubmissionStatus = "spam"
	SubmissionQuarantined SubmissionStatus = "quarantined"
)

// Reasons recorded with spam and quarantined submissions.
const (
	ReasonHoneypot           = "honeypot"
	ReasonOriginRejected     = "origin_rejected"
	ReasonRateLimited        = "rate_limited"
	ReasonSchemaViolation    = "schema_violation"
	ReasonCaptchaFailed      = "captcha_failed"
	ReasonCaptchaUnavailable = "captcha_unavailable"
	// ReasonNoRouteMatched marks an accepted submission that no route's guards let
	// through: it is stored and shown in the inbox, but nothing was planned for it.
	ReasonNoRouteMatched = "no_route_matched"
)

// DeliveryStatus is the life cycle of one planned notification (docs/design.md, 'Delivery
// statuses').
type DeliveryStatus string

const (
	DeliveryPending DeliveryStatus = "pending" // due
	DeliverySending DeliveryStatus = "sending" // leased by a worker
	DeliveryFailed  DeliveryStatus = "failed"  // last try failed, retry scheduled
	DeliverySent    DeliveryStatus = "sent"
	DeliveryDead    DeliveryStatus = "dead"    // gave up; retryable by hand
	DeliverySkipped DeliveryStatus = "skipped" // spam/quarantine; release makes it pending
	// DeliveryParked is a delivery held because its destination is parked (destination.go):
	// not due, no attempt spent; unparking the destination makes it pending again.
	DeliveryParked DeliveryStatus = "parked"
)

// Channel is how a delivery travels.
type Channel string

const (
	ChannelEmail   Channel = "email"
	ChannelWebhook Channel = "webhook"
	// The chat channels. A Telegram delivery's recipient is the chat id (the bot token
	// stays in the config); Slack's, Discord's and Teams' is the webhook URL.
	ChannelTelegram Channel = "telegram"
	ChannelSlack    Channel = "slack"
	ChannelDiscord  Channel = "discord"
	ChannelTeams    Channel = "teams"
	// ChannelAutoreply is the visitor's confirmation e-mail (docs/design.md,
	// "Autoreplies"): sent through the e-mail providers, kept to one per address, form
	// and window by the store.
	ChannelAutoreply Channel = "autoreply"
)

// IsEmail reports whether c travels as e-mail: a notification or an autoreply. Both go
// through the e-mail provider chain, the suppression list and bounce feedback.
func (c Channel) IsEmail() bool { return c == ChannelEmail || c == ChannelAutoreply }

// ChatChannels lists the chat channels, in the order they are documented.
var ChatChannels = []Channel{ChannelTelegram, ChannelSlack, ChannelDiscord, ChannelTeams}

// IsChat reports whether c is a chat channel: its payload is the exact request body
// rendered at intake, and its recipient is a chat id (Telegram) or a webhook URL.
func (c Channel) IsChat() bool {
	switch c {
	case ChannelTelegram, ChannelSlack, ChannelDiscord, ChannelTeams:
		return true
	}
	return false
}

// Attempt outcomes recorded in delivery_attempts.
type Outcome string

const (
	OutcomeSent      Outcome = "sent"
	OutcomeTemporary Outcome = "temporary"
	OutcomePermanent Outcome = "permanent"
	OutcomeAmbiguous Outcome = "ambiguous"
)

// Event kinds written to the events table.
const (
	EventSubmissionReceived = "submission.received"
	EventDeliveryDead       = "delivery.dead"
	EventSchemaDrift        = "schema.drift"
	// EventUnrouted records a submission none of its form's routes matched (every route
	// has guards and none held, and there is no fallback route): stored, sent nowhere.
	EventUnrouted = "submission.unrouted"
	// EventTemplateFailed records that a route's own template failed on a submission
	// (intake sent the built-in message instead); its data names the route, the option,
	// the file and the template engine's error, never a submitted value.
	EventTemplateFailed = "template.failed"
	// EventDestinationParked and EventDestinationUnparked record a park and an unpark
	// (parkstore.go): the destination's key, channel and reason, who did it ("worker",
	// "probe" or the operator), and how many deliveries an unpark resumed.
	EventDestinationParked   = "destination.parked"
	EventDestinationUnparked = "destination.unparked"
	// EventTemplateEmpty records that a delivery's message printed a field its
	// submission did not carry (a subject's {field.NAME}, a template's {{field "NAME"}}),
	// so that part went out empty; its data names the form, the route, the option, the
	// field and the delivery, never a value (intake/templateempty.go).
	EventTemplateEmpty = "template.empty"
)

// Field is one submitted form field. Submissions keep fields in the order the visitor's
// browser sent them, so Data is a slice, stored as a JSON object with that key order.
type Field struct {
	Name  string
	Value string
}

// Fields is an ordered set of form fields that marshals to (and from) a JSON object
// without losing the order.
type Fields []Field

// Get returns the value of the first field called name.
func (f Fields) Get(name string) (string, bool) {
	for _, fl := range f {
		if fl.Name == name {
			return fl.Value, true
		}
	}
	return "", false
}

// MarshalJSON writes the fields as a JSON object in their original order.
func (f Fields) MarshalJSON() ([]byte, error) { return f.AppendJSON(nil), nil }

// AppendJSON appends the fields as a JSON object in their original order ({} when there
// are none), encoded as encoding/json encodes strings. Hot paths call it directly:
// json.Marshal re-scans a Marshaler's output.
func (f Fields) AppendJSON(dst []byte) []byte {
	o := jsonw.NewObject(dst)
	for _, fl := range f {
		o.String(fl.Name, fl.Value)
	}
	return o.Close()
}

// UnmarshalJSON reads a flat JSON object of strings, keeping key order.
func (f *Fields) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("fields: want a JSON object")
	}
	out := Fields{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("fields: value of %q: %w", kt, err)
		}
		out = append(out, Field{Name: kt.(string), Value: v})
	}
	*f = out
	return nil
}

// Meta is what we keep about the request beside its fields. ClientIP holds a keyed hash
// by default, never the raw address unless the operator asked for it.
type Meta struct {
	Origin    string `json:"origin,omitempty"`
	Referer   string `json:"referer,omitempty"`
	UserAgent string `json:"user_agent,omitempty"`
	ClientIP  string `json:"client_ip,omitempty"`
}

// AppendJSON appends m as JSON, as encoding/json.Marshal writes it (empty members left
// out).
func (m Meta) AppendJSON(dst []byte) []byte {
	o := jsonw.NewObject(dst)
	o.StringOmitEmpty("origin", m.Origin)
	o.StringOmitEmpty("referer", m.Referer)
	o.StringOmitEmpty("user_agent", m.UserAgent)
	o.StringOmitEmpty("client_ip", m.ClientIP)
	return o.Close()
}

// Submission is one stored form post. Its ID (UUIDv7) is made by intake before any write,
// so a spooled submission keeps its identity when it is replayed.
type Submission struct {
	ID             uuid.UUID
	Form           string
	Status         SubmissionStatus
	Reason         string
	Data           Fields
	Meta           Meta
	IdempotencyKey string // empty: none given
	ContentHash    string
	Test           bool
	CreatedAt      time.Time
	// Events are written by Accept in the same transaction as the submission, after its
	// submission.received event (e.g. schema.drift in monitor mode). The store sets
	// their SubmissionID, and At when zero. Nothing is written for a duplicate.
	Events []Event
	// Files are the uploaded files, written by Accept in the same transaction (see
	// File); a duplicate writes none. Nil for a post without files.
	Files []File
	// Signals are what intake's spam screening noticed (signals.go); Accept keeps them,
	// with their score, in the submission.received event. Nil: none.
	Signals []Signal
}

// Delivery is one planned notification of one submission: one per route per recipient.
type Delivery struct {
	ID                uuid.UUID
	SubmissionID      uuid.UUID
	Route             string
	Channel           Channel
	Recipient         string
	Status            DeliveryStatus
	Attempts          int
	MaxAttempts       int
	NextAttemptAt     time.Time
	LeaseOwner        string
	LeaseToken        string
	LockedUntil       time.Time // zero when not leased
	LastError         string
	Provider          string
	ProviderMessageID string
	// Payload is the snapshot of the message as planned at intake (JSON), so a later
	// config change never alters what a stored submission sends.
	Payload   json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	SentAt    time.Time // zero until sent
}

// Attempt is one try of one delivery: the history an operator reads.
type Attempt struct {
	DeliveryID        uuid.UUID
	Attempt           int
	Provider          string
	StartedAt         time.Time
	FinishedAt        time.Time
	Outcome           Outcome
	HTTPStatus        int
	ErrorCode         string
	Error             string
	ProviderMessageID string
	// BodySHA256 is the hex SHA-256 of the request body the provider was sent (webhook
	// and chat: what the receiver got, and for a webhook what its signature covers);
	// empty for e-mail. It tells which body an attempt sent when a release rewrote the
	// stored one (docs/design.md, "Told as it is when sent").
	BodySHA256 string
}

// Event is an append-only record of something an operator may want to know about.
type Event struct {
	ID           int64
	Kind         string
	SubmissionID uuid.UUID // uuid.Nil when not about a submission
	DeliveryID   uuid.UUID // uuid.Nil when not about a delivery
	Data         json.RawMessage
	At           time.Time
}
