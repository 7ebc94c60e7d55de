package intake

import (
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Formspree-compatible special fields. Every name starting with "_" is an instruction
// to the service, not visitor content: the known ones are read here, unknown ones are
// dropped, so that a future special field never leaks into notifications or the data.
const (
	fieldIdempotencyKey = "_idempotency_key"
	fieldReplyTo        = "_replyto"
	fieldSubject        = "_subject"
	fieldNext           = "_next"
	fieldTest           = "_test"

	headerIdempotencyKey = "Idempotency-Key"

	maxSubjectLength = 200
)

// specials holds what the special fields asked for.
type specials struct {
	honeypot       string
	idempotencyKey string
	replyTo        string // as sent; validated later
	subject        string // single line, bounded
	next           string // safe same-origin path or URL, or empty
	test           bool   // _test: stored with the test flag
	captcha        string // the configured captcha provider's token
	timeTrap       string // the time trap's token (timetrap.go)
	altcha         string // the ALTCHA widget's payload (altcha.go)
}

// split separates the special fields (and the honeypot, whatever its name) from the
// visitor's data.
func (c *Config) split(fields outbox.Fields, r *http.Request) (outbox.Fields, specials, error) {
	var sp specials
	data := make(outbox.Fields, 0, len(fields))
	for _, f := range fields {
		switch {
		case f.Name == c.Honeypot:
			sp.honeypot = f.Value
		case f.Name == fieldIdempotencyKey:
			sp.idempotencyKey = f.Value
		case f.Name == fieldReplyTo:
			sp.replyTo = f.Value
		case f.Name == fieldSubject:
			sp.subject = truncateRunes(singleLine(f.Value), maxSubjectLength)
		case f.Name == fieldNext:
			sp.next = c.safeNext(f.Value, r)
		case f.Name == fieldTest:
			sp.test = truthy(f.Value)
		case f.Name == FieldTimeTrap:
			sp.timeTrap = f.Value
		case f.Name == FieldAltcha:
			// The widget's payload is never visitor content, configured or not.
			sp.altcha = f.Value
		case slices.Contains(captchaFields, f.Name):
			if c.Captcha != nil && f.Name == c.Captcha.field() {
				sp.captcha = f.Value
			}
		case strings.HasPrefix(f.Name, "_"):
		default:
			data = append(data, f)
		}
	}
	// The header wins: it is what HTTP clients and retry libraries set deliberately.
	if h := strings.TrimSpace(r.Header.Get(headerIdempotencyKey)); h != "" {
		sp.idempotencyKey = h
	}
	if k := sp.idempotencyKey; k != "" {
		// The field was checked by normalise, the header was not: invalid UTF-8 there
		// would fail PostgreSQL's insert and send every such post to the spool.
		if !utf8.ValidString(k) {
			return nil, sp, badRequest("idempotency key must be valid UTF-8")
		}
		if utf8.RuneCountInString(k) > MaxIdempotencyKeyLength {
			return nil, sp, badRequest("idempotency key too long (at most %d characters)", MaxIdempotencyKeyLength)
		}
		if hasControl(k) {
			return nil, sp, badRequest("idempotency key must not contain control characters")
		}
	}
	return data, sp, nil
}

// truthy reads a checkbox-like flag: present and not "false", "0", "off" or "no".
func truthy(v string) bool {
	switch strings.ToLower(v) {
	case "", "false", "0", "off", "no":
		return false
	}
	return true
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
