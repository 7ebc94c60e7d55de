package intake

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/internal/jsonw"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/google/uuid"
)

// answer is the JSON body of every answer. Duplicate is set only when the store found
// the idempotency key already used: a client retrying after a lost answer learns that its
// first post got through (it is never about spam, so it reveals no detection). Next is
// the page an HTML post would have been redirected to, so a script posting for JSON
// (browserclient/client.js) can follow the same `_next` or configured redirect.
type answer struct {
	OK        bool        `json:"ok"`
	ID        string      `json:"id,omitempty"`
	Status    string      `json:"status,omitempty"`
	Duplicate bool        `json:"duplicate,omitempty"`
	Next      string      `json:"next,omitempty"`
	Errors    []Violation `json:"errors,omitempty"`
	Error     string      `json:"error,omitempty"`
}

// writeAnswer writes the answer once the store committed the submission (or found a
// duplicate, or the spool took it). stored carries the id and status to report: on a
// duplicate those of the original submission.
//
//   - A schema violation (quarantined/schema_violation, enforce mode) is answered 422 with
//     the per-field messages: JSON {"ok":false,"id","status":"quarantined","errors":[...]}
//     or a small HTML page listing them. A duplicate of such a post gets 422 again.
//   - A post whose idempotency key was already used for other content gets 422 (see
//     writeKeyReused); it was stored quarantined/idempotency_key_reused.
//   - A rate-limited post gets 429 with Retry-After (see writeRateLimited).
//   - Everything else is answered as a success: JSON {"ok":true,"id","status","next"} with
//     200 (next only when a redirect applies), or
//     for HTML posts 303 See Other to `_next` (if safe) or Config.Redirect, or a built-in
//     thank-you page with 200. The JSON status is the stored row's own ("accepted",
//     "spam", "quarantined"; "queued" while only the spool holds it): no answer claims a
//     status the row does not have. The HTML answer names no status, so the bots that
//     post plain forms learn nothing from it.
//
// It reports whether the answer was a success (the lead ledger counts those).
func (c *Config) writeAnswer(w http.ResponseWriter, r *http.Request, res *Result, stored outbox.AcceptResult) (success bool) {
	id := stored.ID
	if id == uuid.Nil {
		id = res.Submission.ID
	}
	status := stored.Status
	if status == "" {
		status = res.Submission.Status
	}
	w.Header().Set("Cache-Control", "no-store")

	sub := res.Submission
	if stored.KeyReused {
		c.writeKeyReused(w, res, id)
		return false
	}
	if sub.Reason == outbox.ReasonRateLimited {
		c.writeRateLimited(w, res, stored)
		return false
	}
	if sub.Status == outbox.SubmissionQuarantined &&
		(sub.Reason == outbox.ReasonSchemaViolation || sub.Reason == outbox.ReasonFileRejected) &&
		(status == outbox.SubmissionQuarantined || status == outbox.StatusQueued) {
		if res.WantsJSON {
			writeJSON(w, http.StatusUnprocessableEntity, answer{
				ID: id.String(), Status: string(outbox.SubmissionQuarantined),
				Duplicate: stored.Duplicate, Errors: res.Violations,
			})
			return false
		}
		writeHTML(w, http.StatusUnprocessableEntity, problemsPage, res.Violations)
		return false
	}

	public := string(status)
	target := res.Next
	if target == "" {
		target = c.Redirect
	}
	if res.WantsJSON {
		writeJSON(w, http.StatusOK, answer{OK: true, ID: id.String(), Status: public, Duplicate: stored.Duplicate, Next: target})
		return true
	}
	if target != "" {
		w.Header().Set("Location", target)
		w.WriteHeader(http.StatusSeeOther)
		return true
	}
	writeHTML(w, http.StatusOK, thanksPage, nil)
	return true
}

// KeyReusedMessage is the error of a post whose idempotency key is bound to a stored
// submission with other content, the case the IETF Idempotency-Key draft answers with
// 422.
const KeyReusedMessage = "idempotency key reused with different content; send a new message with a new key"

// writeKeyReused answers a post stored as quarantined/idempotency_key_reused: 422, with
// the new row's id and its real status, so the client knows this content was kept but
// will not be sent, and that its first message (the key's owner) stands.
func (c *Config) writeKeyReused(w http.ResponseWriter, res *Result, id uuid.UUID) {
	if res.WantsJSON {
		writeJSON(w, http.StatusUnprocessableEntity, answer{ID: id.String(),
			Status: string(outbox.SubmissionQuarantined), Error: KeyReusedMessage})
		return
	}
	writeHTML(w, http.StatusUnprocessableEntity, keyReusedPage, nil)
}

// writeRateLimited answers a post over the rate limit: 429 with Retry-After in seconds.
// A stored one (quarantined/rate_limited, kept for review) reports its id; one past the
// form's storage quota was not stored and has none.
func (c *Config) writeRateLimited(w http.ResponseWriter, res *Result, stored outbox.AcceptResult) {
	secs := int(res.RetryAfter / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	msg := fmt.Sprintf("too many submissions from your address; please try again in %d seconds", max(secs, 1))
	if res.WantsJSON {
		a := answer{Error: msg}
		if stored.ID != uuid.Nil {
			a.ID, a.Status = stored.ID.String(), string(outbox.SubmissionQuarantined)
		}
		writeJSON(w, http.StatusTooManyRequests, a)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte(msg + "\n"))
}

// writeError answers a request that did not become a submission. A *RequestError gets its
// status and message (JSON {"ok":false,"error":...} for JSON clients, plain text
// otherwise). Any other error means neither the store nor the spool could take the
// submission: 503 with Retry-After, the only answer that asks the client to try again,
// and a generic message (the cause is for the log, not the visitor).
func (c *Config) writeError(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Cache-Control", "no-store")
	var re *RequestError
	if !errors.As(err, &re) {
		w.Header().Set("Retry-After", "5")
		re = &RequestError{
			Status:  http.StatusServiceUnavailable,
			Message: "the form could not be saved right now; please try again in a few seconds",
		}
	}
	switch re.Status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", http.MethodPost)
	case http.StatusUnsupportedMediaType:
		w.Header().Set("Accept-Post", typeURLEncoded+", "+typeMultipart+", "+typeJSON)
	}
	if acceptsJSON(r) || isJSONRequest(r) {
		writeJSON(w, re.Status, answer{Error: re.Message})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(re.Status)
	_, _ = w.Write([]byte(re.Message + "\n"))
}

func isJSONRequest(r *http.Request) bool {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(ct), typeJSON)
}

func writeJSON(w http.ResponseWriter, status int, a answer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(a.appendJSON(make([]byte, 0, 96)), '\n'))
}

// appendJSON appends the answer as encoding/json.Marshal writes it (the struct tags
// above), without reflection: it is written once per post.
func (a answer) appendJSON(dst []byte) []byte {
	o := jsonw.NewObject(dst)
	o.Bool("ok", a.OK)
	o.StringOmitEmpty("id", a.ID)
	o.StringOmitEmpty("status", a.Status)
	if a.Duplicate {
		o.Bool("duplicate", true)
	}
	o.StringOmitEmpty("next", a.Next)
	if len(a.Errors) > 0 {
		p := o.Key("errors")
		*p = append(*p, '[')
		for i, v := range a.Errors {
			if i > 0 {
				*p = append(*p, ',')
			}
			e := jsonw.NewObject(*p)
			e.String("field", v.Field)
			e.String("message", v.Message)
			*p = e.Close()
		}
		*p = append(*p, ']')
	}
	o.StringOmitEmpty("error", a.Error)
	return o.Close()
}

func writeHTML(w http.ResponseWriter, status int, t *template.Template, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	// A failure here is a broken connection mid-answer; the submission is stored either way.
	_ = t.Execute(w, data)
}

var thanksPage = template.Must(template.New("thanks").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Thank you</title></head>
<body style="font-family:sans-serif;max-width:36em;margin:3em auto">
<h1>Thank you</h1>
<p>Your message has been received.</p>
</body></html>
`))

var problemsPage = template.Must(template.New("problems").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Please check the form</title></head>
<body style="font-family:sans-serif;max-width:36em;margin:3em auto">
<h1>Please check the form</h1>
<ul>
{{- range .}}
<li>{{.Message}}</li>
{{- end}}
</ul>
<p>Go back, correct these fields and send the form again.</p>
</body></html>
`))

// keyReusedPage is what a browser gets when it posts new content with the hidden
// _idempotency_key of a form it already sent (going back after the thank-you page and
// editing): reloading the form gives it a new key.
var keyReusedPage = template.Must(template.New("key-reused").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>This form was already sent</title></head>
<body>
<h1>This form was already sent</h1>
<p>Your first message was received. This page already sent it, so these changes were not sent.</p>
<p>Reload the form to send a new message.</p>
</body></html>
`))
