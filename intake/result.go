package intake

import (
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Result is what Parse makes of one request: the submission to store, its planned
// deliveries, and what the answer needs to know. Nothing in it has been written yet.
type Result struct {
	// Submission carries its UUIDv7 id, status, reason, ordered data, meta,
	// idempotency key and content hash.
	Submission *outbox.Submission
	// Deliveries are one per route per recipient: pending for an accepted submission,
	// skipped for spam and quarantine (a release turns them pending).
	Deliveries []outbox.Delivery
	// Violations are the per-field problems found by the field spec, in spec order. In
	// enforce mode they made the submission quarantined; in monitor mode it is accepted
	// and the caller may record a schema.drift event.
	Violations []Violation
	// WantsJSON is true when the client sent Accept: application/json or a JSON body.
	WantsJSON bool
	// Next is the visitor's `_next` redirect when it is safe (a path on this site, or a
	// URL on this host or an allowed origin); it takes precedence over Config.Redirect.
	Next string
	// RetryAfter is set for a rate-limited post: the answer is 429 with this wait.
	RetryAfter time.Duration
	// Stored, when set, means the post must NOT be stored: Serve answers it at once as if
	// the store had returned *Stored. It is set for a double post (the first
	// post's id and status, Duplicate set) and for a rate-limited post past the form's
	// quota of stored rate_limited rows (a zero AcceptResult: nothing has an id).
	Stored *outbox.AcceptResult
	// CaptchaError says why the captcha verifier was unavailable (for the log: it holds
	// neither the secret nor the token).
	CaptchaError error

	dedupeKey string
	uploads   *uploads // the temporary files behind Submission.Files
}

// Close releases what the submission's files hold (temporary files) once it is stored or
// spooled, or will not be. Serve calls it; a caller of Parse must.
func (r *Result) Close() {
	if r != nil {
		r.uploads.close()
	}
}

// Violation is one field that broke the field spec.
type Violation struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// RequestError is a request that cannot become a submission at all (too large, wrong
// content type, malformed). Nothing is stored; the client gets Status with Message.
type RequestError struct {
	Status  int
	Message string
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("intake: %d %s", e.Status, e.Message)
}

func badRequest(format string, args ...any) *RequestError {
	return &RequestError{Status: 400, Message: fmt.Sprintf(format, args...)}
}
