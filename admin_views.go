package formoutbox

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The admin API's JSON shapes are defined in internal/adminapi/views.go, which
// `caddy form-outbox` reads them with; these names keep the route code short.
type (
	submissionView = adminapi.Submission
	deliveryView   = adminapi.Delivery
	attemptView    = adminapi.Attempt
	feedbackView   = adminapi.Feedback
	replayAnswer   = adminapi.Replay
)

// pageView is one page of a list; Next is the cursor of the following page.
type pageView[T any] = adminapi.Page[T]

func newSubmissionView(s *outbox.Submission) submissionView {
	data := s.Data
	if data == nil {
		data = outbox.Fields{}
	}
	return submissionView{
		ID: s.ID.String(), Form: s.Form, Status: string(s.Status), Reason: s.Reason,
		CreatedAt: s.CreatedAt, Test: s.Test, IdempotencyKey: s.IdempotencyKey,
		Data: data, Meta: s.Meta,
	}
}

func newDeliveryView(d outbox.Delivery) deliveryView {
	return deliveryView{
		ID: d.ID.String(), SubmissionID: d.SubmissionID.String(), Route: d.Route,
		Channel: string(d.Channel), Recipient: d.Recipient, Status: string(d.Status),
		Attempts: d.Attempts, MaxAttempts: d.MaxAttempts, NextAttemptAt: d.NextAttemptAt,
		LeaseOwner: d.LeaseOwner, LockedUntil: timePtr(d.LockedUntil), LastError: d.LastError,
		Provider: d.Provider, ProviderMessageID: d.ProviderMessageID,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, SentAt: timePtr(d.SentAt),
	}
}

func newAttemptView(a outbox.Attempt) attemptView {
	return attemptView{
		Attempt: a.Attempt, Provider: a.Provider, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt,
		Outcome: string(a.Outcome), HTTPStatus: a.HTTPStatus, ErrorCode: a.ErrorCode,
		Error: a.Error, ProviderMessageID: a.ProviderMessageID,
	}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
