package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Post-send outcomes reported by a provider after it accepted a message (SES through
// SNS, Resend webhooks). They are stored in their own table, delivery_feedback, beside
// the attempts: an attempt is one try of ours with a number and a lease, feedback is what
// the receiving side said later, possibly several times per attempt.
type FeedbackKind string

const (
	FeedbackDelivered  FeedbackKind = "delivered"
	FeedbackBounced    FeedbackKind = "bounced"
	FeedbackComplained FeedbackKind = "complained"
)

// Bounce types. A hard bounce (the mailbox does not exist, the domain refuses us) kills
// the delivery; a soft one (mailbox full, greylisting, a delay) is only recorded.
const (
	BounceHard = "hard"
	BounceSoft = "soft"
)

// Event kinds written with feedback.
const (
	EventDeliveryBounced    = "delivery.bounced"
	EventDeliveryComplained = "delivery.complained"
	EventDeliveryDelivered  = "delivery.delivered"
)

// Reasons recorded in last_error (prefix) and error codes of deliveries that feedback or
// the suppression list made dead.
const (
	ReasonBounced    = "bounced"
	ReasonSuppressed = "suppressed"
)

// ErrFeedbackReplay means a feedback message with the same (source, receipt id) was
// already recorded: the sender retried or somebody replays it. Nothing was written.
var ErrFeedbackReplay = errors.New("outbox: feedback message already received")

// Feedback is one post-send report about one delivery.
type Feedback struct {
	// Source is who reported it ("ses", "resend"); with ReceiptID it is the replay key.
	Source string
	// ReceiptID is the transport's message id (SNS MessageId, svix-id).
	ReceiptID string
	Kind      FeedbackKind
	// BounceType is BounceHard or BounceSoft for FeedbackBounced, empty otherwise.
	BounceType string
	// Diagnostic is the remote server's words (SMTP status and text, complaint type).
	Diagnostic string
	// ProviderMessageID is the provider's id of the message (SES MessageId, Resend id).
	ProviderMessageID string
	// DeliveryID is the delivery id carried in the message itself (the SES outbox_id
	// tag); uuid.Nil when the report has none. It wins over ProviderMessageID, which may
	// belong to an earlier attempt.
	DeliveryID uuid.UUID
	OccurredAt time.Time
	ReceivedAt time.Time
	// Suppress adds the delivery's recipient to the suppression list when this is a hard
	// bounce or a complaint.
	Suppress bool
}

// FeedbackResult says what RecordFeedback changed.
type FeedbackResult struct {
	// Delivery is the matched delivery as it is after the write.
	Delivery Delivery
	// Dead is true when this feedback made the delivery dead (a hard bounce of a sent
	// delivery).
	Dead bool
	// Suppressed is true when the recipient was newly added to the suppression list.
	Suppressed bool
}

// Suppression is one address that is not sent to any more.
type Suppression struct {
	Address    string // lower-case
	Reason     string // bounced, complained, manual
	DeliveryID uuid.UUID
	CreatedAt  time.Time
}

// FeedbackStore is the part of Store that keeps post-send feedback and the suppression
// list; feedback.Receiver and SuppressionGuard need no more of the store than this.
type FeedbackStore interface {
	// RecordFeedback finds the delivery f is about (by f.DeliveryID, else by
	// provider_message_id) and, in one transaction: remembers (f.Source, f.ReceiptID),
	// stores the feedback entry and its event (delivery.bounced, ...), makes a sent
	// delivery dead on a hard bounce (last_error "bounced: <diagnostic>") and suppresses
	// the recipient when asked. ErrNotFound when no delivery matches and ErrFeedbackReplay
	// when the receipt was seen: both write nothing.
	RecordFeedback(ctx context.Context, f Feedback) (FeedbackResult, error)
	// ListFeedback returns a delivery's feedback, oldest first.
	ListFeedback(ctx context.Context, deliveryID uuid.UUID) ([]Feedback, error)

	// AddSuppression adds (or keeps) an address; the first reason stays.
	AddSuppression(ctx context.Context, s Suppression) error
	// RemoveSuppression removes an address; ErrNotFound when it is not listed.
	RemoveSuppression(ctx context.Context, address string) error
	// ListSuppressions returns suppressed addresses, newest first, at most limit
	// (PageLimit applies).
	ListSuppressions(ctx context.Context, limit int) ([]Suppression, error)
	// IsSuppressed reports whether address is on the list.
	IsSuppressed(ctx context.Context, address string) (bool, error)
}

// NormalizeAddress is the suppression list's key for an address: trimmed and lower-case,
// so a bounce reported as Foo@Example.com suppresses foo@example.com.
func NormalizeAddress(a string) string { return strings.ToLower(strings.TrimSpace(a)) }

// FeedbackReceiptTTL is how long replay keys are kept. Senders retry for minutes to
// hours and the receivers refuse messages older than their timestamp tolerance, so a
// week is ample; stores delete older keys as they write new ones.
const FeedbackReceiptTTL = 7 * 24 * time.Hour

// FeedbackPlan is what one feedback report does to its delivery, decided once here so
// both stores apply the same rules.
type FeedbackPlan struct {
	// Dead: the delivery becomes dead with LastError.
	Dead      bool
	LastError string
	// Suppress, when not nil, is added to the suppression list.
	Suppress *Suppression
	Event    Event
}

// maxDiagnostic bounds the remote server's text kept with feedback and in last_error.
const maxDiagnostic = 1000

// PlanFeedback decides what f does to d. Only a sent delivery dies of a hard bounce: one
// that is pending or being sent again (a manual retry) belongs to the worker, whose fenced
// write would overwrite ours anyway.
func PlanFeedback(d Delivery, f Feedback) FeedbackPlan {
	at := f.ReceivedAt
	if at.IsZero() {
		at = time.Now()
	}
	p := FeedbackPlan{}
	hard := f.Kind == FeedbackBounced && f.BounceType == BounceHard
	if hard && d.Status == DeliverySent {
		p.Dead = true
		p.LastError = ReasonBounced
		if f.Diagnostic != "" {
			p.LastError += ": " + truncate(f.Diagnostic, maxDiagnostic)
		}
	}
	if f.Suppress && d.Channel.IsEmail() && (hard || f.Kind == FeedbackComplained) {
		reason := ReasonBounced
		if f.Kind == FeedbackComplained {
			reason = string(FeedbackComplained)
		}
		p.Suppress = &Suppression{Address: NormalizeAddress(d.Recipient), Reason: reason, DeliveryID: d.ID, CreatedAt: at}
	}
	kind := EventDeliveryDelivered
	switch f.Kind {
	case FeedbackBounced:
		kind = EventDeliveryBounced
	case FeedbackComplained:
		kind = EventDeliveryComplained
	}
	// Ids and classes only, like delivery.dead: the diagnostic may quote the address.
	data, _ := json.Marshal(feedbackEventData{
		Source:     f.Source,
		Route:      d.Route,
		BounceType: f.BounceType,
		Dead:       p.Dead,
		Suppressed: p.Suppress != nil,
		MessageID:  f.ProviderMessageID,
		OccurredAt: f.OccurredAt,
	})
	p.Event = Event{Kind: kind, SubmissionID: d.SubmissionID, DeliveryID: d.ID, Data: data, At: at}
	return p
}

type feedbackEventData struct {
	Source     string    `json:"source"`
	Route      string    `json:"route"`
	BounceType string    `json:"bounce_type,omitempty"`
	Dead       bool      `json:"dead,omitempty"`
	Suppressed bool      `json:"suppressed,omitempty"`
	MessageID  string    `json:"provider_message_id,omitempty"`
	OccurredAt time.Time `json:"occurred_at,omitzero"`
}

// TruncateDiagnostic bounds a diagnostic to what stores keep.
func TruncateDiagnostic(s string) string { return truncate(s, maxDiagnostic) }
