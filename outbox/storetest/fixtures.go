package storetest

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// SubmissionOption adjusts what NewSubmission builds.
type SubmissionOption func(*outbox.Submission)

// WithStatus sets the status and reason (spam, quarantined).
func WithStatus(status outbox.SubmissionStatus, reason string) SubmissionOption {
	return func(s *outbox.Submission) { s.Status, s.Reason = status, reason }
}

// WithIdempotencyKey sets the idempotency key.
func WithIdempotencyKey(key string) SubmissionOption {
	return func(s *outbox.Submission) { s.IdempotencyKey = key }
}

// WithContentHash sets the content hash, which is what tells a retry of a post (same
// hash) from other content sent with the same idempotency key.
func WithContentHash(hash string) SubmissionOption {
	return func(s *outbox.Submission) { s.ContentHash = hash }
}

// WithCreatedAt sets the creation time (deliveries from NewDelivery become due then).
func WithCreatedAt(t time.Time) SubmissionOption {
	return func(s *outbox.Submission) { s.CreatedAt = t.UTC().Truncate(time.Microsecond) }
}

// WithFields replaces the data with name, value pairs, kept in this order.
func WithFields(nameValues ...string) SubmissionOption {
	return func(s *outbox.Submission) {
		s.Data = outbox.Fields{}
		for i := 0; i+1 < len(nameValues); i += 2 {
			s.Data = append(s.Data, outbox.Field{Name: nameValues[i], Value: nameValues[i+1]})
		}
	}
}

// NewSubmission builds a valid accepted submission of form with a fresh UUIDv7. Its
// default fields are deliberately not in alphabetical order, so a store that loses the
// visitor's field order fails comparisons. CreatedAt is now, at microsecond precision
// (what both stores keep).
func NewSubmission(form string, opts ...SubmissionOption) *outbox.Submission {
	s := &outbox.Submission{
		ID:     uuid.Must(uuid.NewV7()),
		Form:   form,
		Status: outbox.SubmissionAccepted,
		Data: outbox.Fields{
			{Name: "name", Value: "Ada Lovelace"},
			{Name: "email", Value: "ada@example.com"},
			{Name: "message", Value: "Hello \"world\" — ünïcode <b>&</b>\nsecond line"},
			{Name: "accept_terms", Value: "yes"},
		},
		Meta: outbox.Meta{
			Origin:    "https://example.com",
			Referer:   "https://example.com/contact.html",
			UserAgent: "storetest/1.0",
			ClientIP:  "hmac:4f2a",
		},
		ContentHash: "sha256:" + strings.Repeat("ab", 32),
		CreatedAt:   time.Now().UTC().Truncate(time.Microsecond),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// NewDelivery plans one delivery of sub: pending (skipped when sub is spam or
// quarantined), due at sub.CreatedAt, 8 attempts, with a payload snapshot. A recipient
// starting with http is a webhook.
func NewDelivery(sub *outbox.Submission, route, recipient string) outbox.Delivery {
	ch := outbox.ChannelEmail
	p := outbox.Payload{To: recipient, ReplyTo: "ada@example.com", Subject: "New " + sub.Form + " submission",
		Text: "name: Ada Lovelace\n", HTML: "<p>name: Ada Lovelace</p>"}
	if strings.HasPrefix(recipient, "http") {
		ch = outbox.ChannelWebhook
		body, _ := json.Marshal(sub.Data)
		p = outbox.Payload{URL: recipient, Body: body}
	}
	payload, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	status := outbox.DeliveryPending
	if sub.Status != outbox.SubmissionAccepted {
		status = outbox.DeliverySkipped
	}
	return outbox.Delivery{
		ID:            uuid.Must(uuid.NewV7()),
		SubmissionID:  sub.ID,
		Route:         route,
		Channel:       ch,
		Recipient:     recipient,
		Status:        status,
		MaxAttempts:   8,
		NextAttemptAt: sub.CreatedAt,
		Payload:       payload,
		CreatedAt:     sub.CreatedAt,
		UpdatedAt:     sub.CreatedAt,
	}
}
