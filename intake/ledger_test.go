package intake

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

type answerTally struct{ answered, queued int }

func (a *answerTally) Answered(form string, _ time.Time, queued bool) {
	if form != "contact" {
		panic("form " + form)
	}
	a.answered++
	if queued {
		a.queued++
	}
}

// The lead ledger counts the new posts answered success, and only those: a post stored
// but answered 422 (a schema violation), a duplicate, a 503 and a test post are not.
func TestServeCountsTheAnswersOfSuccessForTheLedger(t *testing.T) {
	c := contactConfig(t)
	tally := &answerTally{}
	c.Ledger = tally
	stored := func(sub *outbox.Submission) (outbox.AcceptResult, error) {
		return outbox.AcceptResult{ID: sub.ID, Status: sub.Status}, nil
	}
	duplicate := func(sub *outbox.Submission) (outbox.AcceptResult, error) {
		return outbox.AcceptResult{ID: sub.ID, Status: outbox.SubmissionAccepted, Duplicate: true}, nil
	}
	test := func(sub *outbox.Submission) (outbox.AcceptResult, error) {
		sub.Test = true // as the canary's submissions are marked
		return outbox.AcceptResult{ID: sub.ID, Status: sub.Status}, nil
	}
	acc := &scriptedAccepter{answers: []func(*outbox.Submission) (outbox.AcceptResult, error){
		stored, spooled, storeDown, duplicate, test, stored}}
	c.DedupeOff = true
	for i, body := range []string{
		`{"name":"Ada","email":"ada@example.com","message":"one"}`,
		`{"name":"Ada","email":"ada@example.com","message":"two"}`,
		`{"name":"Ada","email":"ada@example.com","message":"three"}`,
		`{"name":"Ada","email":"ada@example.com","message":"four"}`,
		`{"name":"Ada","email":"ada@example.com","message":"five"}`,
		`{"name":"Ada","email":"not an address","message":"six"}`,
	} {
		r := postJSON(body)
		r.Header.Set("Accept", "application/json")
		w := httptest.NewRecorder()
		c.Serve(w, r, acc, nil)
		want := []int{http.StatusOK, http.StatusOK, http.StatusServiceUnavailable, http.StatusOK, http.StatusOK, http.StatusUnprocessableEntity}[i]
		if w.Code != want {
			t.Fatalf("post %d: %d %s, want %d", i, w.Code, w.Body, want)
		}
	}
	if *tally != (answerTally{answered: 2, queued: 1}) {
		t.Errorf("counted %+v, want 2 answered, 1 of them queued", *tally)
	}
}

// Which forms the ledger may flag for an accepted post without a delivery.
func TestDeliversEveryPost(t *testing.T) {
	email := Route{Channel: outbox.ChannelEmail, To: []string{"a@example.com"}}
	guarded := email
	guarded.When = []Guard{{Field: "topic", Op: GuardIs, Values: []string{"sales"}}}
	fallback := email
	fallback.Fallback = true
	digestRoute := email
	digestRoute.Digest = "daily"
	for _, c := range []struct {
		name   string
		routes []Route
		want   bool
	}{
		{"store only", nil, false},
		{"one route", []Route{email}, true},
		{"guarded only (a miss is no_route_matched)", []Route{guarded}, true},
		{"digest only", []Route{digestRoute}, false},
		{"guarded beside a digest", []Route{guarded, digestRoute}, false},
		{"guarded and fallback beside a digest", []Route{guarded, fallback, digestRoute}, true},
		{"unguarded beside a digest", []Route{email, digestRoute}, true},
	} {
		if got := (&Config{Routes: c.routes}).DeliversEveryPost(); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
