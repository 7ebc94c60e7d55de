package intake

import (
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Default spam thresholds: a score of DefaultQuarantineAt quarantines a post that every
// defence let through, DefaultSpamAt files it as spam. They are set so that no single weak
// signal (a missing time-trap token, weight 1) and no single medium one (a post faster
// than the time trap allows, weight 4) changes a post's outcome: a real lead filed as spam
// is the worst mistake this service can make.
const (
	DefaultQuarantineAt = 5
	DefaultSpamAt       = 10
)

// Signal names and their default weights (docs/caddyfile.md, "Spam signals"). The
// existing defences report a signal too, with the weight that matches what they already
// decide on their own (honeypot and a failed captcha: spam; origin, rate limit:
// quarantine), so a form's signals always explain its status.
const (
	SignalHoneypot           = "honeypot"
	SignalOriginRejected     = "origin_rejected"
	SignalRateLimited        = "rate_limited"
	SignalCaptchaFailed      = "captcha_failed"
	SignalCaptchaUnavailable = "captcha_unavailable"

	WeightHoneypot           = 10
	WeightOriginRejected     = 5
	WeightRateLimited        = 5
	WeightCaptchaFailed      = 10
	WeightCaptchaUnavailable = 0
)

// Spam is the `spam { ... }` block: the thresholds the post's score is held to, and the
// signed time trap (timetrap.go). Nil in Config: the defaults.
type Spam struct {
	// QuarantineAt is the score from which a post the defences accepted is stored
	// quarantined/spam_suspected; default DefaultQuarantineAt.
	QuarantineAt int `json:"quarantine_at,omitempty"`
	// SpamAt is the score from which it is stored spam/spam_suspected; default
	// DefaultSpamAt. It must not be below QuarantineAt.
	SpamAt int `json:"spam_at,omitempty"`
	// TimeTrapMin is how long after its token's issue a post may come without the
	// time_trap_too_fast signal; default DefaultTimeTrapMin (timetrap.go).
	TimeTrapMin Duration `json:"time_trap_min,omitempty"`
	// TimeTrapMax is how long a token stays valid; default DefaultTimeTrapMax.
	TimeTrapMax Duration `json:"time_trap_max,omitempty"`
	// TimeTrapOff turns the time trap off: no token is issued and no post judged on one.
	TimeTrapOff bool `json:"time_trap_off,omitempty"`
}

func (s *Spam) provision() error {
	if s.QuarantineAt < 0 || s.SpamAt < 0 {
		return fmt.Errorf("spam: quarantine_at and spam_at must be positive")
	}
	if s.QuarantineAt == 0 {
		s.QuarantineAt = DefaultQuarantineAt
	}
	if s.SpamAt == 0 {
		s.SpamAt = max(DefaultSpamAt, s.QuarantineAt)
	}
	if s.SpamAt < s.QuarantineAt {
		return fmt.Errorf("spam: spam_at %d is below quarantine_at %d", s.SpamAt, s.QuarantineAt)
	}
	if s.TimeTrapMin < 0 || s.TimeTrapMax < 0 {
		return fmt.Errorf("spam: time_trap durations must not be negative")
	}
	if s.TimeTrapMin == 0 {
		s.TimeTrapMin = Duration(DefaultTimeTrapMin)
	}
	if s.TimeTrapMax == 0 {
		s.TimeTrapMax = Duration(DefaultTimeTrapMax)
	}
	if s.TimeTrapMax <= s.TimeTrapMin {
		return fmt.Errorf("spam: time_trap maximum %s must be above its minimum %s", time.Duration(s.TimeTrapMax), time.Duration(s.TimeTrapMin))
	}
	return nil
}

// judge holds a post the defences left accepted to the form's thresholds. A post one of
// them already refused keeps that defence's status and reason: its signals are the record,
// not a second verdict, so the defaults change nothing the defences decided before
// signals existed.
func (s *Spam) judge(sub *outbox.Submission) {
	if sub.Status != outbox.SubmissionAccepted {
		return
	}
	switch score := outbox.Score(sub.Signals); {
	case score >= s.SpamAt:
		sub.Status, sub.Reason = outbox.SubmissionSpam, outbox.ReasonSpamSuspected
	case score >= s.QuarantineAt:
		sub.Status, sub.Reason = outbox.SubmissionQuarantined, outbox.ReasonSpamSuspected
	}
}

// signal records one signal on the submission.
func signal(sub *outbox.Submission, name string, weight int, evidence string) {
	sub.Signals = append(sub.Signals, outbox.Signal{Name: name, Weight: weight, Evidence: evidence})
}
