// Package resendfake is a local stand-in for the Resend API that speaks its wire format,
// for tests that drive the real resend-go client (providers/resend). It serves
// POST /emails, answers {"id": ...} or an error {"statusCode","name","message"} with
// that status, and records every request with its headers (Idempotency-Key,
// Authorization).
//
// Like Resend, it honours Idempotency-Key: a repeated key that was already accepted gets
// the first answer's id again and is not counted as a new email, so Emails() is what a
// recipient would have received. Scripting, per request: Enqueue replies (then
// SetDefault or Func); a Reply can set the status, error name and message, Retry-After,
// Hang (read the request, never answer) or Drop (close the connection). Refuse closes
// the listener (connection refused) and Resume reopens it on the same port.
//
//	srv := resendfake.New()
//	defer srv.Close()
//	srv.Enqueue(resendfake.RateLimited("2"))
//	... endpoint srv.URL() ...
//	srv.Emails() // accepted emails, one per idempotency key
package resendfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/formoutbox/caddy-form-outbox/providers/internal/fakehttp"
)

// Path is where Resend's send-email endpoint is posted.
const Path = "/emails"

// DomainsPath is where the account's domains are listed (a GET).
const DomainsPath = "/domains"

// Request is one recorded HTTP request, with headers and raw body.
type Request = fakehttp.Request

// Reply scripts the answer to one request. The zero Reply is a success (200, a new id).
type Reply struct {
	// Status is the HTTP status; 0 means 200, or 400 when Name is set.
	Status int
	// Name is the error name, e.g. "validation_error", "rate_limit_exceeded".
	Name    string
	Message string
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Hang reads the request and never answers, until the client gives up.
	Hang bool
	// Drop reads the request and closes the connection without answering.
	Drop bool
}

// Common Resend errors, with the status Resend answers them with.
func RateLimited(retryAfter string) Reply {
	return Reply{Status: 429, Name: "rate_limit_exceeded", Message: "Too many requests.", RetryAfter: retryAfter}
}
func ValidationError() Reply {
	return Reply{Status: 422, Name: "validation_error", Message: "Invalid `to` field."}
}
func InvalidAPIKey() Reply {
	return Reply{Status: 403, Name: "invalid_api_key", Message: "API key is invalid"}
}
func MissingAPIKey() Reply {
	return Reply{Status: 401, Name: "missing_api_key", Message: "Missing API key in the authorization header."}
}
func ApplicationError() Reply {
	return Reply{Status: 500, Name: "application_error", Message: "An unexpected error occurred."}
}
func ConcurrentIdempotent() Reply {
	return Reply{Status: 409, Name: "concurrent_idempotent_requests", Message: "Same idempotency key used while original request is still in progress."}
}

// Email is the decoded request body.
type Email struct {
	From    string   `json:"from"`
	To      []string `json:"to"`
	Subject string   `json:"subject"`
	ReplyTo string   `json:"reply_to"`
	HTML    string   `json:"html"`
	Text    string   `json:"text"`
	// Attachments as Resend's API takes them: the content as an array of byte values
	// (what the Go SDK sends).
	Attachments []Attachment `json:"attachments"`
}

// Attachment is one attached file.
type Attachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Content     []int  `json:"content"`
}

// Bytes returns the attachment's content.
func (a Attachment) Bytes() []byte {
	b := make([]byte, len(a.Content))
	for i, v := range a.Content {
		b[i] = byte(v)
	}
	return b
}

// Sent is one accepted email.
type Sent struct {
	ID             string
	IdempotencyKey string
	Email          Email
	Request        Request
}

// Server is the fake. Safe for concurrent use.
type Server struct {
	fakehttp.Script[Reply]
	*fakehttp.Server // Requests, Count, WaitCount, URL, Refuse, Resume, Close
	ids              atomic.Int64
	sent             fakehttp.Log[Sent]
	quota            atomic.Pointer[fakehttp.Quota]

	mu     sync.Mutex
	apiKey string
	byKey  map[string]string // idempotency key -> id
	// domains are what DomainsPath lists, name -> status; nil: example.com, verified.
	domains map[string]string
}

// SetDomains sets the account's domains (name -> status, e.g. "verified", "pending").
func (s *Server) SetDomains(domains map[string]string) {
	s.mu.Lock()
	s.domains = domains
	s.mu.Unlock()
}

// New starts a fake Resend on a free loopback port. It panics if it cannot listen.
func New() *Server {
	s := &Server{byKey: map[string]string{}}
	srv, err := fakehttp.New(s.handle)
	if err != nil {
		panic(err)
	}
	s.Server = srv
	return s
}

// EnforceRate refuses requests beyond perSecond sustained (a second's burst allowed) as
// Resend answers rate_limit_exceeded (429) past its API limit, before the script is asked.
func (s *Server) EnforceRate(perSecond float64) { s.quota.Store(fakehttp.NewQuota(perSecond)) }

// Throttled is how many requests EnforceRate refused.
func (s *Server) Throttled() int {
	if q := s.quota.Load(); q != nil {
		return q.Refused()
	}
	return 0
}

// URL is the base URL to configure (`endpoint` / resend.Config.Endpoint).
func (s *Server) URL() string { return s.Server.URL() }

// RequireAPIKey makes requests without "Authorization: Bearer key" fail as Resend does
// (401 without a key, 403 with another one).
func (s *Server) RequireAPIKey(key string) {
	s.mu.Lock()
	s.apiKey = key
	s.mu.Unlock()
}

func (s *Server) handle(n int, r Request) (fakehttp.Action, int, http.Header, []byte) {
	list := r.Method == http.MethodGet && r.Path == DomainsPath
	if !list && (r.Method != http.MethodPost || r.Path != Path) {
		return errorAnswer(Reply{Status: 404, Name: "not_found", Message: "The requested endpoint does not exist."})
	}
	s.mu.Lock()
	want := s.apiKey
	domains := s.domains
	s.mu.Unlock()
	if want != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		switch {
		case !ok || got == "":
			return errorAnswer(MissingAPIKey())
		case got != want:
			return errorAnswer(InvalidAPIKey())
		}
	}
	if list {
		if domains == nil {
			domains = map[string]string{"example.com": "verified"}
		}
		var data []map[string]string
		for name, status := range domains {
			data = append(data, map[string]string{"object": "domain", "name": name, "status": status})
		}
		return fakehttp.Answer, http.StatusOK, http.Header{"Content-Type": {"application/json"}},
			fakehttp.JSON(map[string]any{"object": "list", "data": data})
	}
	if q := s.quota.Load(); q != nil && !q.Allow(r.At) {
		return errorAnswer(RateLimited("1"))
	}
	reply := s.Next(n, r)
	switch {
	case reply.Hang:
		return fakehttp.Hang, 0, nil, nil
	case reply.Drop:
		return fakehttp.Drop, 0, nil, nil
	case reply.Name != "" || reply.Status >= 300:
		return errorAnswer(reply)
	}
	var e Email
	if err := json.Unmarshal(r.Body, &e); err != nil {
		return errorAnswer(Reply{Status: 422, Name: "validation_error", Message: "body is not JSON"})
	}
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	id, repeat := s.byKey[key]
	if !repeat {
		id = fmt.Sprintf("4ef9a417-fake-resend-%06d", s.ids.Add(1))
		if key != "" {
			s.byKey[key] = id
		}
	}
	s.mu.Unlock()
	if !repeat {
		s.sent.Add(Sent{ID: id, IdempotencyKey: key, Email: e, Request: r})
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	return fakehttp.Answer, status, http.Header{"Content-Type": {"application/json"}}, fakehttp.JSON(map[string]string{"id": id})
}

func errorAnswer(r Reply) (fakehttp.Action, int, http.Header, []byte) {
	status := r.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if r.RetryAfter != "" {
		h.Set("Retry-After", r.RetryAfter)
	}
	return fakehttp.Answer, status, h, fakehttp.JSON(map[string]any{"statusCode": status, "name": r.Name, "message": r.Message})
}

// Emails returns the accepted emails, one per idempotency key, in order.
func (s *Server) Emails() []Sent { return s.sent.All() }
