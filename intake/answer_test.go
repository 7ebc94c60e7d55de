package intake

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/google/uuid"
)

var originalID = uuid.MustParse("0195500a-1111-7000-8000-000000000001")

func TestWriteAnswer(t *testing.T) {
	tests := []struct {
		name     string
		adjust   func(*Config)
		req      func(t *testing.T) *http.Request
		store    func(res *Result) outbox.AcceptResult // nil: committed as is
		code     int
		location string
		ctype    string
		body     func(res *Result) string // exact body; "" for none
		contains []string                 // for HTML pages
	}{
		{
			name:     "HTML urlencoded post is redirected with 303",
			req:      func(t *testing.T) *http.Request { return postForm(form(validContact...)) },
			code:     303,
			location: "/thanks.html",
			body:     func(*Result) string { return "" },
		},
		{
			name:     "HTML multipart post is redirected with 303",
			req:      func(t *testing.T) *http.Request { return postMultipart(t, validContact...) },
			code:     303,
			location: "/thanks.html",
			body:     func(*Result) string { return "" },
		},
		{
			name: "safe _next wins over the configured redirect",
			req: func(t *testing.T) *http.Request {
				return postForm(form(append(validContact, "_next", "/merci.html")...))
			},
			code:     303,
			location: "/merci.html",
			body:     func(*Result) string { return "" },
		},
		{
			name: "unsafe _next is ignored",
			req: func(t *testing.T) *http.Request {
				return postForm(form(append(validContact, "_next", "https://evil.example/")...))
			},
			code:     303,
			location: "/thanks.html",
			body:     func(*Result) string { return "" },
		},
		{
			name:     "no redirect configured: built-in thank-you page",
			adjust:   func(c *Config) { c.Redirect = "" },
			req:      func(t *testing.T) *http.Request { return postForm(form(validContact...)) },
			code:     200,
			ctype:    "text/html; charset=utf-8",
			contains: []string{"<title>Thank you</title>", "Your message has been received."},
		},
		{
			name: "JSON body gets the JSON answer",
			req: func(t *testing.T) *http.Request {
				return postJSON(`{"name":"Ada","email":"ada@example.com","message":"Hi"}`)
			},
			code:  200,
			ctype: "application/json",
			body: func(res *Result) string {
				return fmt.Sprintf(`{"ok":true,"id":"%s","status":"accepted","next":"/thanks.html"}`+"\n", res.Submission.ID)
			},
		},
		{
			name: "JSON answer names a safe _next for a script to follow",
			req: func(t *testing.T) *http.Request {
				return postJSON(`{"name":"Ada","email":"ada@example.com","message":"Hi","_next":"/merci.html"}`)
			},
			code:  200,
			ctype: "application/json",
			body: func(res *Result) string {
				return fmt.Sprintf(`{"ok":true,"id":"%s","status":"accepted","next":"/merci.html"}`+"\n", res.Submission.ID)
			},
		},
		{
			name:   "JSON answer has no next when no redirect is configured",
			adjust: func(c *Config) { c.Redirect = "" },
			req: func(t *testing.T) *http.Request {
				return postJSON(`{"name":"Ada","email":"ada@example.com","message":"Hi"}`)
			},
			code:  200,
			ctype: "application/json",
			body: func(res *Result) string {
				return fmt.Sprintf(`{"ok":true,"id":"%s","status":"accepted"}`+"\n", res.Submission.ID)
			},
		},
		{
			name: "form post with Accept: application/json gets the JSON answer",
			req: func(t *testing.T) *http.Request {
				r := postMultipart(t, validContact...)
				r.Header.Set("Accept", "application/json")
				return r
			},
			code:  200,
			ctype: "application/json",
			body: func(res *Result) string {
				return fmt.Sprintf(`{"ok":true,"id":"%s","status":"accepted","next":"/thanks.html"}`+"\n", res.Submission.ID)
			},
		},
		{
			name: "spam is stored and answered ok with its real status (JSON)",
			req: func(t *testing.T) *http.Request {
				return postJSON(`{"name":"Ada","email":"ada@example.com","message":"Hi","_gotcha":"filled"}`)
			},
			code:  200,
			ctype: "application/json",
			body: func(res *Result) string {
				return fmt.Sprintf(`{"ok":true,"id":"%s","status":"spam","next":"/thanks.html"}`+"\n", res.Submission.ID)
			},
		},
		{
			name:     "spam is answered exactly like success (HTML)",
			req:      func(t *testing.T) *http.Request { return postForm(form(append(validContact, "_gotcha", "filled")...)) },
			code:     303,
			location: "/thanks.html",
			body:     func(*Result) string { return "" },
		},
		{
			name:  "schema violation: 422 with per-field messages (JSON)",
			req:   func(t *testing.T) *http.Request { return postJSON(`{"name":"","email":"nope"}`) },
			code:  422,
			ctype: "application/json",
			body: func(res *Result) string {
				return fmt.Sprintf(`{"ok":false,"id":"%s","status":"quarantined","errors":[`+
					`{"field":"name","message":"name is required"},`+
					`{"field":"email","message":"email must be a valid email address"},`+
					`{"field":"message","message":"message is required"}]}`+"\n", res.Submission.ID)
			},
		},
		{
			name:     "schema violation: 422 page listing the problems (HTML)",
			req:      func(t *testing.T) *http.Request { return postForm(form("name", "Ada", "email", "<b>@x")) },
			code:     422,
			ctype:    "text/html; charset=utf-8",
			contains: []string{"<li>email must be a valid email address</li>", "<li>message is required</li>"},
		},
		{
			name: "duplicate answers with the original id and status",
			req: func(t *testing.T) *http.Request {
				r := postJSON(`{"name":"Ada","email":"ada@example.com","message":"Hi"}`)
				r.Header.Set("Idempotency-Key", "k1")
				return r
			},
			store: func(*Result) outbox.AcceptResult {
				return outbox.AcceptResult{ID: originalID, Status: outbox.SubmissionAccepted, Duplicate: true}
			},
			code:  200,
			ctype: "application/json",
			body: func(*Result) string {
				return `{"ok":true,"id":"0195500a-1111-7000-8000-000000000001","status":"accepted","duplicate":true,"next":"/thanks.html"}` + "\n"
			},
		},
		{
			name: "duplicate of a schema violation is 422 again with the original id",
			req: func(t *testing.T) *http.Request {
				r := postJSON(`{"name":"Ada","email":"ada@example.com"}`)
				r.Header.Set("Idempotency-Key", "k2")
				return r
			},
			store: func(*Result) outbox.AcceptResult {
				return outbox.AcceptResult{ID: originalID, Status: outbox.SubmissionQuarantined, Duplicate: true}
			},
			code:  422,
			ctype: "application/json",
			body: func(*Result) string {
				return `{"ok":false,"id":"0195500a-1111-7000-8000-000000000001","status":"quarantined","duplicate":true,` +
					`"errors":[{"field":"message","message":"message is required"}]}` + "\n"
			},
		},
		{
			name: "duplicate of a spam post reports the original's status",
			req: func(t *testing.T) *http.Request {
				r := postJSON(`{"name":"Ada","email":"ada@example.com","message":"Hi"}`)
				r.Header.Set("Idempotency-Key", "k3")
				return r
			},
			store: func(*Result) outbox.AcceptResult {
				return outbox.AcceptResult{ID: originalID, Status: outbox.SubmissionSpam, Duplicate: true}
			},
			code:  200,
			ctype: "application/json",
			body: func(*Result) string {
				return `{"ok":true,"id":"0195500a-1111-7000-8000-000000000001","status":"spam","duplicate":true,"next":"/thanks.html"}` + "\n"
			},
		},
		{
			name: "a corrected post reusing the key of an accepted one is not 422",
			req: func(t *testing.T) *http.Request {
				r := postForm(form("name", "Ada"))
				r.Header.Set("Idempotency-Key", "k4")
				return r
			},
			store: func(*Result) outbox.AcceptResult {
				return outbox.AcceptResult{ID: originalID, Status: outbox.SubmissionAccepted, Duplicate: true}
			},
			code:     303,
			location: "/thanks.html",
			body:     func(*Result) string { return "" },
		},
		{
			name: "spooled submission says queued",
			req: func(t *testing.T) *http.Request {
				return postJSON(`{"name":"Ada","email":"ada@example.com","message":"Hi"}`)
			},
			store: func(res *Result) outbox.AcceptResult {
				return outbox.AcceptResult{ID: res.Submission.ID, Status: outbox.StatusQueued}
			},
			code:  200,
			ctype: "application/json",
			body: func(res *Result) string {
				return fmt.Sprintf(`{"ok":true,"id":"%s","status":"queued","next":"/thanks.html"}`+"\n", res.Submission.ID)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := contactConfig(t)
			if tt.adjust != nil {
				tt.adjust(c)
			}
			r := tt.req(t)
			res := mustParse(t, c, r)
			st := stored(res)
			if tt.store != nil {
				st = tt.store(res)
			}
			w := httptest.NewRecorder()
			c.writeAnswer(w, r, res, st)
			if w.Code != tt.code {
				t.Errorf("code = %d, want %d (body %q)", w.Code, tt.code, w.Body.String())
			}
			if got := w.Header().Get("Location"); got != tt.location {
				t.Errorf("Location = %q, want %q", got, tt.location)
			}
			if got := w.Header().Get("Content-Type"); tt.ctype != "" && got != tt.ctype {
				t.Errorf("Content-Type = %q, want %q", got, tt.ctype)
			}
			if got := w.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", got)
			}
			if tt.body != nil {
				if got, want := w.Body.String(), tt.body(res); got != want {
					t.Errorf("body =\n%s\nwant\n%s", got, want)
				}
			}
			for _, s := range tt.contains {
				if !strings.Contains(w.Body.String(), s) {
					t.Errorf("body lacks %q:\n%s", s, w.Body.String())
				}
			}
		})
	}
}

func TestWriteError(t *testing.T) {
	tests := []struct {
		name    string
		req     func() *http.Request
		err     error
		code    int
		headers map[string]string
		body    string
	}{
		{
			name:    "request error, JSON body: JSON answer",
			req:     func() *http.Request { return postJSON(`{}`) },
			err:     &RequestError{Status: 413, Message: "request body too large (at most 64 bytes)"},
			code:    413,
			headers: map[string]string{"Content-Type": "application/json"},
			body:    `{"ok":false,"error":"request body too large (at most 64 bytes)"}` + "\n",
		},
		{
			name:    "request error, HTML post: plain text",
			req:     func() *http.Request { return postForm("") },
			err:     &RequestError{Status: 400, Message: "file uploads are not accepted"},
			code:    400,
			headers: map[string]string{"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"},
			body:    "file uploads are not accepted\n",
		},
		{
			name: "415 names what is accepted",
			req: func() *http.Request {
				r := postForm("")
				r.Header.Set("Content-Type", "text/plain")
				r.Header.Set("Accept", "application/json")
				return r
			},
			err:  &RequestError{Status: 415, Message: "unsupported"},
			code: 415,
			headers: map[string]string{
				"Accept-Post":  "application/x-www-form-urlencoded, multipart/form-data, application/json",
				"Content-Type": "application/json",
			},
			body: `{"ok":false,"error":"unsupported"}` + "\n",
		},
		{
			name:    "405 names the allowed method",
			req:     func() *http.Request { return postForm("") },
			err:     &RequestError{Status: 405, Message: "forms are submitted with POST"},
			code:    405,
			headers: map[string]string{"Allow": "POST"},
			body:    "forms are submitted with POST\n",
		},
		{
			name:    "store and spool failure: 503 with Retry-After and no internals",
			req:     func() *http.Request { return postJSON(`{}`) },
			err:     fmt.Errorf("accept: %w", errors.New("dial tcp 10.0.0.5:5432: connection refused")),
			code:    503,
			headers: map[string]string{"Retry-After": "5", "Content-Type": "application/json"},
			body:    `{"ok":false,"error":"the form could not be saved right now; please try again in a few seconds"}` + "\n",
		},
		{
			name:    "store failure on an HTML post",
			req:     func() *http.Request { return postForm("") },
			err:     errors.New("disk full"),
			code:    503,
			headers: map[string]string{"Retry-After": "5"},
			body:    "the form could not be saved right now; please try again in a few seconds\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := contactConfig(t)
			w := httptest.NewRecorder()
			c.writeError(w, tt.req(), tt.err)
			if w.Code != tt.code {
				t.Errorf("code = %d, want %d", w.Code, tt.code)
			}
			for k, v := range tt.headers {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if w.Body.String() != tt.body {
				t.Errorf("body = %q, want %q", w.Body.String(), tt.body)
			}
		})
	}
}

// The whole path a handler runs for a request Parse refuses: Parse then writeError.
func TestOversizedPostAnswered413(t *testing.T) {
	c := contactConfig(t)
	r := postForm(form("message", strings.Repeat("x", DefaultMaxBodyBytes)))
	_, err := c.Parse(r, testNow)
	w := httptest.NewRecorder()
	c.writeError(w, r, err)
	if w.Code != 413 || w.Body.String() != "request body too large (at most 262144 bytes)\n" {
		t.Errorf("got %d %q", w.Code, w.Body.String())
	}
}
