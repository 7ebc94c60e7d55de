package adminapi

import (
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The admin API's JSON shapes. The admin routes (server.go and the files it names) write them
// and `caddy form-outbox` (internal/command) reads them; with --json the CLI prints them
// unchanged, so they are its contract too.

// Submission is one submission as GET /form_outbox/submissions/{id} and the list show it.
type Submission struct {
	ID             string        `json:"id"`
	Form           string        `json:"form"`
	Status         string        `json:"status"`
	Reason         string        `json:"reason,omitempty"`
	CreatedAt      time.Time     `json:"created_at"`
	Test           bool          `json:"test,omitempty"`
	IdempotencyKey string        `json:"idempotency_key,omitempty"`
	Data           outbox.Fields `json:"data"`
	Meta           outbox.Meta   `json:"meta"`
	// Files are the uploaded files' metadata (shown and exported, never their content).
	Files      []File     `json:"files,omitempty"`
	Deliveries []Delivery `json:"deliveries,omitempty"`
}

// File is one uploaded file of a submission: its metadata, never its content.
type File = outbox.FileMeta

// Delivery is one delivery job of a submission.
type Delivery struct {
	ID                string     `json:"id"`
	SubmissionID      string     `json:"submission_id"`
	Route             string     `json:"route"`
	Channel           string     `json:"channel"`
	Recipient         string     `json:"recipient"`
	Status            string     `json:"status"`
	Attempts          int        `json:"attempts"`
	MaxAttempts       int        `json:"max_attempts"`
	NextAttemptAt     time.Time  `json:"next_attempt_at"`
	LeaseOwner        string     `json:"lease_owner,omitempty"`
	LockedUntil       *time.Time `json:"locked_until,omitempty"`
	LastError         string     `json:"last_error,omitempty"`
	Provider          string     `json:"provider,omitempty"`
	ProviderMessageID string     `json:"provider_message_id,omitempty"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
	SentAt            *time.Time `json:"sent_at,omitempty"`
	History           []Attempt  `json:"history,omitempty"`
	// Feedback is what the provider reported after sending (suppressions.go).
	Feedback []Feedback `json:"feedback,omitempty"`
}

// Attempt is one finished try of a delivery.
type Attempt struct {
	Attempt           int       `json:"attempt"`
	Provider          string    `json:"provider,omitempty"`
	StartedAt         time.Time `json:"started_at"`
	FinishedAt        time.Time `json:"finished_at"`
	Outcome           string    `json:"outcome"`
	HTTPStatus        int       `json:"http_status,omitempty"`
	ErrorCode         string    `json:"error_code,omitempty"`
	Error             string    `json:"error,omitempty"`
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
	// BodySHA256 is the hex SHA-256 of the request body this attempt sent (webhook and
	// chat), so a receiver can tell which body it got (docs/design.md, "Told as it is
	// when sent").
	BodySHA256 string `json:"body_sha256,omitempty"`
}

// Feedback is a bounce, complaint or delivery report a provider sent about a delivery.
type Feedback struct {
	Source            string    `json:"source"`
	Kind              string    `json:"kind"`
	BounceType        string    `json:"bounce_type,omitempty"`
	Diagnostic        string    `json:"diagnostic,omitempty"`
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
	OccurredAt        time.Time `json:"occurred_at"`
	ReceivedAt        time.Time `json:"received_at"`
}

// Page is one page of a list; Next is the cursor of the following page.
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}

// Health is the body of GET /form_outbox/health, answered with 503 when Status is
// "unhealthy".
type Health struct {
	Status   string        `json:"status"` // "ok" or "unhealthy"
	Problems []string      `json:"problems,omitempty"`
	Storage  StorageHealth `json:"storage"`
	Worker   WorkerHealth  `json:"worker"`
	Outbox   *OutboxHealth `json:"outbox,omitempty"` // absent when storage is unreachable
	Spool    *SpoolHealth  `json:"spool,omitempty"`
	Backup   *BackupHealth `json:"backup,omitempty"` // backup.go; absent without `backup`
	// Canary is the last verdict on each route of each form with a canary; absent
	// without canaries or when storage is unreachable.
	Canary []CanaryHealth `json:"canary,omitempty"`
}

// CanaryHealth is one route's last canary verdict in the health body. A failed canary
// is not a health problem (the answer stays 200): it tells of a destination, not of this
// instance, and raises an owner alert instead.
type CanaryHealth struct {
	Form        string    `json:"form"`
	Route       string    `json:"route"`
	Channel     string    `json:"channel"`
	Passed      bool      `json:"passed"`
	Error       string    `json:"error,omitempty"`
	At          time.Time `json:"at"`
	PeriodStart time.Time `json:"period_start"`
	// FailingSince is when the route's failed canaries in a row began; absent when
	// the last one passed.
	FailingSince *time.Time `json:"failing_since,omitempty"`
}

// StorageHealth is the database's part of the health body.
type StorageHealth struct {
	Driver    string  `json:"driver"`
	Reachable bool    `json:"reachable"`
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error,omitempty"`
}

// WorkerHealth is the delivery worker's part of the health body.
type WorkerHealth struct {
	// Disabled is `worker off`: not running is then the configuration, not a problem.
	Disabled            bool       `json:"disabled,omitempty"`
	Running             bool       `json:"running"`
	Owner               string     `json:"owner"`
	LastTick            *time.Time `json:"last_tick,omitempty"`
	SinceLastTickSecs   float64    `json:"since_last_tick_seconds"`
	PollIntervalSeconds float64    `json:"poll_interval_seconds"`
}

// OutboxHealth is the live backlog in the health body.
type OutboxHealth struct {
	Backlog          int64   `json:"backlog"`
	Due              int64   `json:"due"`
	OldestDueSeconds float64 `json:"oldest_due_seconds"`
	Dead             int64   `json:"dead"`
}

// SpoolHealth is the spool's part of the health body.
type SpoolHealth struct {
	Enabled bool  `json:"enabled"`
	Depth   int64 `json:"depth"`
	// OldestAgeSeconds is how long the oldest spooled submission has waited for the store.
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
	Error            string  `json:"error,omitempty"`
	// Healthy false turns the whole answer into 503.
	Healthy bool `json:"healthy"`
}

// Replay is the answer of POST /form_outbox/spool/replay, and what the offline
// `caddy form-outbox replay --spool` prints.
type Replay struct {
	Stored     int    `json:"stored"`
	Duplicates int    `json:"duplicates"`
	Segments   int    `json:"segments"`
	Corrupt    int    `json:"corrupt"`
	Remaining  int    `json:"remaining"`
	Error      string `json:"error,omitempty"`
}
