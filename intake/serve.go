package intake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/formoutbox/caddy-form-outbox/browserclient"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Accepter keeps a parsed submission with its planned deliveries. outbox.Acceptor is the
// real one (store, else spool); it reports outbox.StatusQueued for a spooled submission.
// An error means nothing kept the submission: the visitor is answered 503.
type Accepter interface {
	Accept(ctx context.Context, sub *outbox.Submission, deliveries []outbox.Delivery) (outbox.AcceptResult, error)
}

// AnswerCounter counts the new posts answered success, per form and the submission's
// created_at; queued says the spool took the post (outbox.LedgerCounter is one).
type AnswerCounter interface {
	Answered(form string, createdAt time.Time, queued bool)
}

// Serve answers every request the form's path is for, and reports whether it did:
//   - POST is a submission: CORS headers, Parse, acc.Accept, then the answer (writeAnswer),
//     or the error (writeError). A double post or a rate-limited post past its storage
//     quota is answered without calling acc.
//   - OPTIONS is the CORS preflight (preflight).
//   - GET or HEAD with ?form_outbox=client.js is the browser client
//     (browserclient/serve.go): the script belongs to this endpoint, since it speaks the
//     JSON answers written here.
//   - GET or HEAD with ?form_outbox=token is a time-trap token (timetrap.go), unless
//     the form turned the time trap off; it also tells the browser client whether the
//     form wants a proof of work.
//   - GET or HEAD with ?form_outbox=altcha is an ALTCHA challenge (altcha.go), for a
//     form with an altcha block.
//
// Any other request gets false and nothing written, so the caller can pass it on (a GET
// of the form's own path serves the page). logger may be nil; it gets ids, statuses and
// store errors, never field values. Provision must have run.
func (c *Config) Serve(w http.ResponseWriter, r *http.Request, acc Accepter, logger *zap.Logger) bool {
	switch {
	case r.Method == http.MethodPost:
		if logger == nil {
			logger = zap.NewNop()
		}
		c.serveSubmission(w, r, acc, logger, time.Now())
	case r.Method == http.MethodOptions:
		c.preflight(w, r)
	case browserclient.Wants(r):
		browserclient.Serve(w, r)
	case wantsToken(r) && (!c.Spam.TimeTrapOff || c.Altcha != nil):
		c.serveToken(w, r, time.Now())
	case wantsAltcha(r) && c.Altcha != nil:
		c.serveAltcha(w, r, time.Now())
	default:
		return false
	}
	return true
}

// serveSubmission is Serve's POST path with the clock at now.
func (c *Config) serveSubmission(w http.ResponseWriter, r *http.Request, acc Accepter, logger *zap.Logger, now time.Time) {
	c.setCORSHeaders(w, r)
	res, err := c.Parse(r, now)
	if err != nil {
		var re *RequestError
		if !errors.As(err, &re) {
			logger.Error("parse submission", zap.String("form", c.Form), zap.Error(err))
		}
		c.writeError(w, r, err)
		return
	}
	defer res.Close()
	if res.CaptchaError != nil {
		logger.Warn("captcha verifier unavailable; submission quarantined",
			zap.String("form", c.Form), zap.String("id", res.Submission.ID.String()), zap.Error(res.CaptchaError))
	}
	if res.Stored != nil {
		c.writeAnswer(w, r, res, *res.Stored)
		return
	}
	stored, err := acc.Accept(r.Context(), res.Submission, res.Deliveries)
	if err != nil {
		// The Accepter's error text names ids, never field values.
		logger.Error("store submission", zap.String("form", c.Form), zap.Error(err))
		c.writeError(w, r, err)
		return
	}
	if !stored.Duplicate {
		c.logTemplateFailures(logger, res.Submission)
		c.noteTemplateEmpty(logger, res.Submission)
	}
	if ce := logger.Check(zapcore.DebugLevel, "submission stored"); ce != nil {
		ce.Write(zap.String("form", c.Form), zap.String("id", stored.ID.String()),
			zap.String("status", string(stored.Status)), zap.Bool("duplicate", stored.Duplicate))
	}
	c.remember(res, stored)
	if c.writeAnswer(w, r, res, stored) && !stored.Duplicate && c.Ledger != nil && !res.Submission.Test {
		c.Ledger.Answered(c.Form, res.Submission.CreatedAt, stored.Status == outbox.StatusQueued)
	}
}

// logTemplateFailures warns of every template that failed on this submission; the
// failure names the route, the option, the file and the template engine's error, never
// a submitted value.
func (c *Config) logTemplateFailures(logger *zap.Logger, sub *outbox.Submission) {
	for _, ev := range sub.Events {
		var f TemplateFailure
		if ev.Kind != outbox.EventTemplateFailed || json.Unmarshal(ev.Data, &f) != nil {
			continue
		}
		msg := "template failed; the built-in message was sent instead"
		if f.Route == AutoreplyRoute && c.Autoreply != nil {
			msg = "autoreply template failed; no reply was sent"
		}
		logger.Warn(msg, zap.String("form", c.Form),
			zap.String("id", sub.ID.String()), zap.String("route", f.Route), zap.String("option", f.Option),
			zap.String("template", f.Template), zap.String("error", f.Error))
	}
}

// noteTemplateEmpty counts and logs the template.empty events of a stored submission
// (templateempty.go): the route, the option and the field's name, never a value.
func (c *Config) noteTemplateEmpty(logger *zap.Logger, sub *outbox.Submission) {
	for _, ev := range sub.Events {
		var te TemplateEmpty
		if ev.Kind != outbox.EventTemplateEmpty || json.Unmarshal(ev.Data, &te) != nil {
			continue
		}
		c.counters.TemplateEmpty(te.Route).Add(1)
		logger.Warn("a message printed a field the post did not carry; that part was sent empty",
			zap.String("form", c.Form), zap.String("id", sub.ID.String()), zap.String("delivery", te.Delivery),
			zap.String("route", te.Route), zap.String("option", te.Option), zap.String("field", te.Field))
	}
}
