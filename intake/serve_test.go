package intake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// scriptedAccepter answers each Accept with the next of its results, recording what it
// was given.
type scriptedAccepter struct {
	answers []func(sub *outbox.Submission) (outbox.AcceptResult, error)
	got     []*outbox.Submission
}

func (a *scriptedAccepter) Accept(_ context.Context, sub *outbox.Submission, _ []outbox.Delivery) (outbox.AcceptResult, error) {
	a.got = append(a.got, sub)
	next := a.answers[0]
	a.answers = a.answers[1:]
	return next(sub)
}

func storeDown(*outbox.Submission) (outbox.AcceptResult, error) {
	return outbox.AcceptResult{}, errors.New("accept submission: database is locked")
}

func spooled(sub *outbox.Submission) (outbox.AcceptResult, error) {
	return outbox.AcceptResult{ID: sub.ID, Status: outbox.StatusQueued}, nil
}

func jsonContact() *http.Request {
	r := postJSON(`{"name":"Ada Lovelace","email":"ada@example.com","message":"a secret plan"}`)
	r.Header.Set("Accept", "application/json")
	return r
}

// Serve answers the form's POST, its preflight and the browser client, and leaves any
// other request (the page itself) to the caller, untouched.
func TestServeAnswersOnlyTheFormsRequests(t *testing.T) {
	c := contactConfig(t)
	acc := &scriptedAccepter{answers: []func(*outbox.Submission) (outbox.AcceptResult, error){spooled}}

	w := httptest.NewRecorder()
	if !c.Serve(w, httptest.NewRequest(http.MethodOptions, "/contact", nil), acc, nil) || w.Code != http.StatusNoContent ||
		w.Header().Get("Allow") != "OPTIONS, POST" {
		t.Errorf("OPTIONS: %d Allow %q, want 204 with Allow: OPTIONS, POST", w.Code, w.Header().Get("Allow"))
	}
	w = httptest.NewRecorder()
	if !c.Serve(w, httptest.NewRequest(http.MethodGet, "/contact?form_outbox=client.js", nil), acc, nil) ||
		w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), "javascript") || w.Body.Len() == 0 {
		t.Errorf("GET client.js: %d %q (%d bytes), want the script", w.Code, w.Header().Get("Content-Type"), w.Body.Len())
	}
	w = httptest.NewRecorder()
	if c.Serve(w, httptest.NewRequest(http.MethodGet, "/contact", nil), acc, nil) || w.Body.Len() != 0 || len(w.Header()) != 0 {
		t.Errorf("GET of the page: handled or written (%d, %v), want it left to the next handler", w.Code, w.Header())
	}
	if len(acc.got) != 0 {
		t.Fatalf("%d submissions reached the accepter from non-POST requests", len(acc.got))
	}
	w = httptest.NewRecorder()
	if !c.Serve(w, jsonContact(), acc, nil) || w.Code != http.StatusOK || len(acc.got) != 1 {
		t.Fatalf("POST: %d %s (accepted %d), want 200 from the accepter", w.Code, w.Body, len(acc.got))
	}
	var a answer
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || !a.OK || a.Status != "queued" || a.ID != acc.got[0].ID.String() {
		t.Errorf("POST answer %s (%v), want ok, queued, id %s", w.Body, err, acc.got[0].ID)
	}
}

// When the accepter kept nothing, the visitor gets 503 with Retry-After, the log names
// the form and the error but no field value, and the retry is not mistaken for a double
// post: it reaches the accepter again and is stored.
func TestServeAnswers503AndTheRetryIsStored(t *testing.T) {
	c := contactConfig(t)
	core, logs := observer.New(zap.DebugLevel)
	acc := &scriptedAccepter{answers: []func(*outbox.Submission) (outbox.AcceptResult, error){storeDown, spooled}}

	w := httptest.NewRecorder()
	c.Serve(w, jsonContact(), acc, zap.New(core))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("store and spool down: %d Retry-After %q, want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	errs := logs.FilterMessage("store submission").All()
	if len(errs) != 1 || errs[0].ContextMap()["form"] != "contact" || !strings.Contains(errs[0].ContextMap()["error"].(string), "database is locked") {
		t.Fatalf("store error log: %+v, want one line with the form and the error", errs)
	}
	for _, e := range logs.All() {
		for k, v := range e.ContextMap() {
			if s, _ := v.(string); strings.Contains(s, "secret plan") || strings.Contains(s, "ada@example.com") {
				t.Errorf("log %q field %s holds visitor data: %q", e.Message, k, s)
			}
		}
	}

	w = httptest.NewRecorder()
	c.Serve(w, jsonContact(), acc, zap.New(core))
	if w.Code != http.StatusOK || len(acc.got) != 2 {
		t.Fatalf("retry: %d %s after %d accepts, want 200 from a second accept", w.Code, w.Body, len(acc.got))
	}
}

// A post the spool took is remembered like a stored one: an identical repost is answered
// with its id without reaching the accepter.
func TestServeRemembersASpooledPost(t *testing.T) {
	c := contactConfig(t)
	acc := &scriptedAccepter{answers: []func(*outbox.Submission) (outbox.AcceptResult, error){spooled}}
	var ids []string
	for range 2 {
		w := httptest.NewRecorder()
		c.Serve(w, jsonContact(), acc, nil)
		var a answer
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || w.Code != http.StatusOK || a.Status != "queued" {
			t.Fatalf("post: %d %s, want 200 queued", w.Code, w.Body)
		}
		ids = append(ids, a.ID)
	}
	if len(acc.got) != 1 || ids[0] != ids[1] {
		t.Errorf("%d accepts, ids %v; want one accept and the repost answered with its id", len(acc.got), ids)
	}
}
