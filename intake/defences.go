package intake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// screen runs the defences on a parsed post, in this order, and sets its status:
//
//  1. Double post: the same content from the same client within the dedupe window (no
//     idempotency key) is answered with the first post's id; nothing is written.
//  2. Rate limit: a client over `rate_limit` is quarantined/rate_limited and answered
//     429; past the form's quota of such rows per window it is not stored at all. This
//     comes before everything else because it is what bounds the rows a flood writes.
//  3. Honeypot filled: spam/honeypot (no further checks: a bot learns nothing).
//  4. Origin not allowed: quarantined/origin_rejected.
//  5. Field spec: in enforce mode quarantined/schema_violation (answered 422) with a
//     schema.violation event naming the failed fields; in monitor mode accepted with a
//     schema.drift event, also for unknown fields.
//     Files (upload.go): a file that breaks its field's rules makes the post
//     quarantined/file_rejected (answered 422) in either mode, with a file.rejected event.
//  6. Captcha, only for a post still accepted (no verifier call for junk): missing or
//     rejected token spam/captcha_failed; verifier slow, down or misconfigured
//     quarantined/captcha_unavailable, so a real lead is kept for review.
//  7. Spam signals (spam.go): every defence above that fired added a signal; the time
//     trap (timetrap.go) and the proof of work (altcha.go) add their own, and a post
//     still accepted without a passing proof of work that `altcha required` asks for is
//     spam/altcha_failed. A post still accepted is then held to the form's thresholds
//     on its score and may become quarantined or spam with reason spam_suspected.
func (c *Config) screen(r *http.Request, res *Result, sp specials, ip, ipHash string, unknown []string, now time.Time) error {
	sub := res.Submission
	if c.recent != nil && sub.IdempotencyKey == "" {
		res.dedupeKey = dedupeKey(sub, ipHash)
		if prior, ok := c.recent.lookup(res.dedupeKey, now); ok {
			c.counters.Deduplicated.Add(1)
			prior.Duplicate = true
			res.Stored = &prior
			return nil
		}
	}
	if c.limiter != nil {
		if ok, wait := c.limiter.allow(clientKey(ip), now); !ok {
			c.counters.RateLimited.Add(1)
			sub.Status, sub.Reason = outbox.SubmissionQuarantined, outbox.ReasonRateLimited
			signal(sub, SignalRateLimited, WeightRateLimited, "over the form's rate_limit")
			res.RetryAfter = wait
			if !c.limiter.storeQuota(now) {
				c.counters.RateLimitedDropped.Add(1)
				res.Stored = &outbox.AcceptResult{}
			}
			return nil
		}
	}
	switch {
	case sp.honeypot != "":
		sub.Status, sub.Reason = outbox.SubmissionSpam, outbox.ReasonHoneypot
		signal(sub, SignalHoneypot, WeightHoneypot, "the hidden field "+c.Honeypot+" was filled")
		return nil
	case !c.originAllowed(r):
		sub.Status, sub.Reason = outbox.SubmissionQuarantined, outbox.ReasonOriginRejected
		signal(sub, SignalOriginRejected, WeightOriginRejected, "neither Origin nor Referer is an allowed origin")
	}

	res.Violations = append(c.validate(sub.Data), c.validateFileFields(sub.Data, sub.Files)...)
	if c.Mode == ModeMonitor {
		if len(res.Violations) > 0 || len(unknown) > 0 {
			ev, err := driftEvent(c.Form, res.Violations, unknown, now)
			if err != nil {
				return err
			}
			sub.Events = append(sub.Events, ev)
		}
	} else if len(res.Violations) > 0 && sub.Status == outbox.SubmissionAccepted {
		sub.Status, sub.Reason = outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation
		ev, err := violationEvent(c.Form, res.Violations, now)
		if err != nil {
			return err
		}
		sub.Events = append(sub.Events, ev)
	}

	// Files: their rules hold in both modes (a file type is a safety rule, not a schema
	// to monitor), and a rejected file outranks a schema violation as the reason.
	if rejected := c.judgeFiles(sub.Files); len(rejected) > 0 {
		res.Violations = append(res.Violations, rejected...)
		if sub.Status == outbox.SubmissionAccepted || sub.Reason == outbox.ReasonSchemaViolation {
			sub.Status, sub.Reason = outbox.SubmissionQuarantined, outbox.ReasonFileRejected
		}
		data, err := json.Marshal(fileRejectedData(c.Form, sub.Files))
		if err != nil {
			return fmt.Errorf("file.rejected event: %w", err)
		}
		sub.Events = append(sub.Events, outbox.Event{Kind: outbox.EventFileRejected, Data: data, At: now})
	}

	if c.Captcha != nil && sub.Status == outbox.SubmissionAccepted {
		verdict, err := c.Captcha.verify(r.Context(), sp.captcha, ip)
		res.CaptchaError = err
		switch verdict {
		case captchaFailed:
			sub.Status, sub.Reason = outbox.SubmissionSpam, outbox.ReasonCaptchaFailed
			signal(sub, SignalCaptchaFailed, WeightCaptchaFailed, c.Captcha.Provider+" token missing or rejected")
		case captchaUnavailable:
			sub.Status, sub.Reason = outbox.SubmissionQuarantined, outbox.ReasonCaptchaUnavailable
			signal(sub, SignalCaptchaUnavailable, WeightCaptchaUnavailable, c.Captcha.Provider+" verifier unavailable")
		}
	}
	if !c.Spam.TimeTrapOff {
		c.judgeTimeTrap(r.Context(), sub, sp.timeTrap, now)
	}
	if c.Altcha != nil {
		c.judgeAltcha(r.Context(), sub, sp.altcha, now)
	}
	c.Spam.judge(sub)
	return nil
}

// provisionDefences fills the defences' defaults, validates them and builds their state
// (rate limiter, dedupe memory, counters). Called by Provision.
func (c *Config) provisionDefences() error {
	if c.MaxUnknownFields == 0 {
		c.MaxUnknownFields = DefaultMaxUnknown
	}
	if c.MaxUnknownLength == 0 {
		c.MaxUnknownLength = DefaultMaxUnknownLen
	}
	if c.MaxUnknownFields < 0 || c.MaxUnknownLength < 0 {
		return fmt.Errorf("max_unknown_fields and max_unknown_length must not be negative")
	}
	switch c.ClientIPMode {
	case "":
		c.ClientIPMode = ClientIPHash
	case ClientIPHash, ClientIPFull, ClientIPOff:
	default:
		return fmt.Errorf("client_ip %q: want %s, %s or %s", c.ClientIPMode, ClientIPHash, ClientIPFull, ClientIPOff)
	}
	if err := c.provisionFieldChecks(); err != nil {
		return err
	}
	if err := c.provisionOrigins(); err != nil {
		return err
	}
	if c.RateLimit != nil {
		if err := c.RateLimit.provision(); err != nil {
			return err
		}
		c.limiter = newLimiter(*c.RateLimit)
	} else {
		c.limiter = nil
	}
	if c.Captcha != nil {
		if err := c.Captcha.provision(c.AllowedOrigins); err != nil {
			return err
		}
	}
	if c.Altcha != nil {
		if err := c.Altcha.provision(); err != nil {
			return err
		}
	}
	if c.Spam == nil {
		c.Spam = &Spam{}
	}
	if err := c.Spam.provision(); err != nil {
		return err
	}
	if c.DedupeWindow < 0 {
		return fmt.Errorf("dedupe_window must not be negative")
	}
	if c.DedupeWindow == 0 {
		c.DedupeWindow = Duration(DefaultDedupeWindow)
	}
	c.recent = nil
	if !c.DedupeOff {
		c.recent = newRecentPosts(time.Duration(c.DedupeWindow))
	}
	c.counters = CountersFor(c.Form)
	return nil
}
