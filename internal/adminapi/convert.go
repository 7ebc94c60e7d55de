package adminapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// newSubmission is the view of a stored submission (views.go); a submission without
// fields shows "data": {}, never null.
func newSubmission(s *outbox.Submission) Submission {
	data := s.Data
	if data == nil {
		data = outbox.Fields{}
	}
	v := Submission{
		ID: s.ID.String(), Form: s.Form, Status: string(s.Status), Reason: s.Reason,
		CreatedAt: s.CreatedAt, Test: s.Test, IdempotencyKey: s.IdempotencyKey,
		Data: data, Meta: s.Meta,
	}
	for _, f := range s.Files {
		v.Files = append(v.Files, f.Meta())
	}
	return v
}

func newDelivery(d outbox.Delivery) Delivery {
	return Delivery{
		ID: d.ID.String(), SubmissionID: d.SubmissionID.String(), Route: d.Route,
		Channel: string(d.Channel), Recipient: d.Recipient, Status: string(d.Status),
		Attempts: d.Attempts, MaxAttempts: d.MaxAttempts, NextAttemptAt: d.NextAttemptAt,
		LeaseOwner: d.LeaseOwner, LockedUntil: timePtr(d.LockedUntil), LastError: d.LastError,
		Provider: d.Provider, ProviderMessageID: d.ProviderMessageID,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, SentAt: timePtr(d.SentAt),
	}
}

func newAttempt(a outbox.Attempt) Attempt {
	return Attempt{
		Attempt: a.Attempt, Provider: a.Provider, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt,
		Outcome: string(a.Outcome), HTTPStatus: a.HTTPStatus, ErrorCode: a.ErrorCode,
		Error: a.Error, ProviderMessageID: a.ProviderMessageID, BodySHA256: a.BodySHA256,
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
