package feedback

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/ses"
)

// sesEvent is an SES event-publishing record (configuration set -> SNS), or the older
// identity notification, which says notificationType where events say eventType.
type sesEvent struct {
	EventType        string `json:"eventType"`
	NotificationType string `json:"notificationType"`
	Mail             struct {
		MessageID string              `json:"messageId"`
		Tags      map[string][]string `json:"tags"`
	} `json:"mail"`
	Bounce *struct {
		BounceType        string    `json:"bounceType"`
		BounceSubType     string    `json:"bounceSubType"`
		Timestamp         time.Time `json:"timestamp"`
		BouncedRecipients []struct {
			Status         string `json:"status"`
			DiagnosticCode string `json:"diagnosticCode"`
		} `json:"bouncedRecipients"`
	} `json:"bounce"`
	Complaint *struct {
		ComplaintFeedbackType string    `json:"complaintFeedbackType"`
		Timestamp             time.Time `json:"timestamp"`
	} `json:"complaint"`
	Delivery *struct {
		Timestamp    time.Time `json:"timestamp"`
		SMTPResponse string    `json:"smtpResponse"`
	} `json:"delivery"`
	DeliveryDelay *struct {
		DelayType         string    `json:"delayType"`
		Timestamp         time.Time `json:"timestamp"`
		DelayedRecipients []struct {
			Status         string `json:"status"`
			DiagnosticCode string `json:"diagnosticCode"`
		} `json:"delayedRecipients"`
	} `json:"deliveryDelay"`
}

// parseSESEvent turns an SNS notification's Message into feedback. ok is false for event
// types that say nothing about the delivery's fate (Send, Open, Click, ...).
func parseSESEvent(message string) (f outbox.Feedback, ok bool, err error) {
	var ev sesEvent
	if err := json.Unmarshal([]byte(message), &ev); err != nil {
		return f, false, refuse(http.StatusBadRequest, "malformed SES event", err)
	}
	f.Source = "ses"
	f.ProviderMessageID = ev.Mail.MessageID
	if tag := ev.Mail.Tags[ses.DefaultTagName]; len(tag) > 0 {
		if id, err := uuid.Parse(tag[0]); err == nil {
			f.DeliveryID = id
		}
	}
	kind := ev.EventType
	if kind == "" {
		kind = ev.NotificationType
	}
	switch {
	case kind == "Bounce" && ev.Bounce != nil:
		b := ev.Bounce
		f.Kind, f.OccurredAt = outbox.FeedbackBounced, b.Timestamp
		// Transient and Undetermined bounces may succeed on SES's own retries.
		f.BounceType = outbox.BounceSoft
		if b.BounceType == "Permanent" {
			f.BounceType = outbox.BounceHard
		}
		diag := []string{b.BounceType + "/" + b.BounceSubType}
		if len(b.BouncedRecipients) > 0 {
			r := b.BouncedRecipients[0]
			diag = append(diag, r.Status, r.DiagnosticCode)
		}
		f.Diagnostic = joinNonEmpty(diag)
	case kind == "Complaint" && ev.Complaint != nil:
		f.Kind, f.OccurredAt = outbox.FeedbackComplained, ev.Complaint.Timestamp
		f.Diagnostic = ev.Complaint.ComplaintFeedbackType
	case kind == "Delivery" && ev.Delivery != nil:
		f.Kind, f.OccurredAt = outbox.FeedbackDelivered, ev.Delivery.Timestamp
		f.Diagnostic = ev.Delivery.SMTPResponse
	case kind == "DeliveryDelay" && ev.DeliveryDelay != nil:
		d := ev.DeliveryDelay
		f.Kind, f.BounceType, f.OccurredAt = outbox.FeedbackBounced, outbox.BounceSoft, d.Timestamp
		diag := []string{"delayed/" + d.DelayType}
		if len(d.DelayedRecipients) > 0 {
			diag = append(diag, d.DelayedRecipients[0].Status, d.DelayedRecipients[0].DiagnosticCode)
		}
		f.Diagnostic = joinNonEmpty(diag)
	default:
		return f, false, nil
	}
	if f.ProviderMessageID == "" && f.DeliveryID == uuid.Nil {
		return f, false, refuse(http.StatusBadRequest, "malformed SES event", nil)
	}
	return f, true, nil
}

func joinNonEmpty(parts []string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}
