package intake

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/google/uuid"
)

// Parse reads and checks one request. now stamps CreatedAt. It returns a *Result, or a
// *RequestError for requests that cannot become a submission at all: 405 not a POST, 413
// body too large, 415 unsupported content type, 400 malformed body, invalid UTF-8, NUL,
// too many or too long fields, nested JSON, a bad idempotency key. Any
// other error (the system could not make an id) is not the client's fault: answer 503.
//
// Every other request becomes a submission with a status decided by the defences (see
// screen): accepted, spam or quarantined with a reason. A double post or a rate-limited
// post past the storage quota comes back with Result.Stored set and must not be stored.
// Config.Provision must have run.
func (c *Config) Parse(r *http.Request, now time.Time) (*Result, error) {
	if r.Method != http.MethodPost {
		return nil, &RequestError{Status: http.StatusMethodNotAllowed, Message: "forms are submitted with POST"}
	}
	raw, up, isJSON, err := c.readFields(r)
	if err != nil {
		return nil, err
	}
	res, err := c.parse(r, raw, up, isJSON, now)
	if err != nil {
		up.close()
		return nil, err
	}
	return res, nil
}

// parse is Parse once the body is read; up holds its files (nil when none could be sent).
func (c *Config) parse(r *http.Request, raw outbox.Fields, up *uploads, isJSON bool, now time.Time) (*Result, error) {
	fields, err := c.normalise(raw)
	if err != nil {
		return nil, err
	}
	data, sp, err := c.split(fields, r)
	if err != nil {
		return nil, err
	}
	data = c.dropEmptyFileFields(data)
	data, unknown := c.capUnknown(data)
	var files []outbox.File
	if up != nil {
		files = up.files
		for i := range files {
			files[i].CreatedAt = now
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("intake: submission id: %w", err)
	}
	ip := c.clientIP(r)
	ipHash := c.hashIP(ip) // once: the stored meta and the dedupe key both use it
	sub := &outbox.Submission{
		ID:             id,
		Form:           c.Form,
		Status:         outbox.SubmissionAccepted,
		Data:           data,
		Meta:           c.meta(r, ip, ipHash),
		IdempotencyKey: sp.idempotencyKey,
		ContentHash:    contentHash(c.Form, withFileHashes(data, files)),
		Test:           sp.test,
		CreatedAt:      now,
		Files:          files,
	}
	res := &Result{Submission: sub, WantsJSON: isJSON || acceptsJSON(r), Next: sp.next, uploads: up}
	if err := c.screen(r, res, sp, ip, ipHash, unknown, now); err != nil {
		return nil, err
	}
	if sub.Status == outbox.SubmissionSpam {
		// What a bot can make us store is capped: its files' metadata, not their bytes.
		for i := range sub.Files {
			sub.Files[i].HasContent, sub.Files[i].Content = false, nil
		}
	}
	if res.Stored != nil {
		return res, nil // answered without storing: nothing to plan
	}
	if res.Deliveries, err = c.plan(sub, sp, replyTo(sp, data), now); err != nil {
		return nil, fmt.Errorf("intake: %w", err)
	}
	return res, nil
}

// replyTo picks the visitor's address for Reply-To: `_replyto`, else the `email`
// field, and only a valid bare address (never in From, never with a display name).
func replyTo(sp specials, data outbox.Fields) string {
	if validEmail(sp.replyTo) {
		return sp.replyTo
	}
	if v, _ := data.Get("email"); validEmail(v) {
		return v
	}
	return ""
}

// acceptsJSON reports an Accept header naming application/json explicitly; "*/*" (what
// fetch sends by default) is not enough, since browsers' form posts send it too.
func acceptsJSON(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(h, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && mt == typeJSON {
				return true
			}
		}
	}
	return false
}
