package feedback

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// ResendConfig configures the Resend webhook receiver.
type ResendConfig struct {
	// Secret is the endpoint's signing secret, whsec_...
	Secret string
	// Tolerance bounds the svix-timestamp's distance from our clock. Default 5m.
	Tolerance time.Duration
}

// resendEvent is a Resend webhook body.
type resendEvent struct {
	Type      string `json:"type"`
	CreatedAt string `json:"created_at"`
	Data      struct {
		EmailID string `json:"email_id"`
		Bounce  *struct {
			Message string `json:"message"`
			SubType string `json:"subType"`
			Type    string `json:"type"`
		} `json:"bounce"`
	} `json:"data"`
}

// parseResendEvent turns a verified webhook body into feedback; ok is false for event
// types that say nothing about the delivery's fate (email.sent, email.opened, ...).
func parseResendEvent(body []byte) (f outbox.Feedback, ok bool, err error) {
	var ev resendEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return f, false, refuse(http.StatusBadRequest, "malformed Resend event", err)
	}
	f.Source = "resend"
	f.ProviderMessageID = ev.Data.EmailID
	f.OccurredAt, _ = time.Parse(time.RFC3339Nano, ev.CreatedAt)
	switch ev.Type {
	case "email.bounced":
		// Resend sends email.bounced for permanent rejections; an explicit Transient or
		// Undetermined type is kept soft.
		f.Kind, f.BounceType = outbox.FeedbackBounced, outbox.BounceHard
		if b := ev.Data.Bounce; b != nil {
			if b.Type != "" && b.Type != "Permanent" {
				f.BounceType = outbox.BounceSoft
			}
			f.Diagnostic = joinNonEmpty([]string{b.Type + "/" + b.SubType, b.Message})
		}
	case "email.complained":
		f.Kind = outbox.FeedbackComplained
	case "email.delivered":
		f.Kind = outbox.FeedbackDelivered
	case "email.delivery_delayed":
		f.Kind, f.BounceType, f.Diagnostic = outbox.FeedbackBounced, outbox.BounceSoft, "delivery delayed"
	default:
		return f, false, nil
	}
	if f.ProviderMessageID == "" {
		return f, false, refuse(http.StatusBadRequest, "malformed Resend event", nil)
	}
	return f, true, nil
}
