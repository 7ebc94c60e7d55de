package formoutbox

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The admin API's JSON shapes. They are the contract of `caddy form-outbox --json` too.

type submissionView struct {
	ID             string         `json:"id"`
	Form           string         `json:"form"`
	Status         string         `json:"status"`
	Reason         string         `json:"reason,omitempty"`
	CreatedAt      time.Time      `json:"created_at"`
	Test           bool           `json:"test,omitempty"`
	IdempotencyKey string         `json:"idempotency_key,omitempty"`
	Data           outbox.Fields  `json:"data"`
	Meta           outbox.Meta    `json:"meta"`
	Deliveries     []deliveryView `json:"deliveries,omitempty"`
}

type deliveryView struct {
	ID                string        `json:"id"`
	SubmissionID      string        `json:"submission_id"`
	Route             string        `json:"route"`
	Channel           string        `json:"channel"`
	Recipient         string        `json:"recipient"`
	Status            string        `json:"status"`
	Attempts          int           `json:"attempts"`
	MaxAttempts       int           `json:"max_attempts"`
	NextAttemptAt     time.Time     `json:"next_attempt_at"`
	LeaseOwner        string        `json:"lease_owner,omitempty"`
	LockedUntil       *time.Time    `json:"locked_until,omitempty"`
	LastError         string        `json:"last_error,omitempty"`
	Provider          string        `json:"provider,omitempty"`
	ProviderMessageID string        `json:"provider_message_id,omitempty"`
	CreatedAt         time.Time     `json:"created_at"`
	UpdatedAt         time.Time     `json:"updated_at"`
	SentAt            *time.Time    `json:"sent_at,omitempty"`
	History           []attemptView `json:"history,omitempty"`
	// Feedback is what the provider reported after sending (admin_suppression.go).
	Feedback []feedbackView `json:"feedback,omitempty"`
}

type attemptView struct {
	Attempt           int       `json:"attempt"`
	Provider          string    `json:"provider,omitempty"`
	StartedAt         time.Time `json:"started_at"`
	FinishedAt        time.Time `json:"finished_at"`
	Outcome           string    `json:"outcome"`
	HTTPStatus        int       `json:"http_status,omitempty"`
	ErrorCode         string    `json:"error_code,omitempty"`
	Error             string    `json:"error,omitempty"`
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
}

// pageView is one page of a list; Next is the cursor of the following page.
type pageView[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}

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
