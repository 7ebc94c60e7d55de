// Package sesfake is a local stand-in for Amazon SES v2 that speaks its wire format, for
// tests that drive the real SDK client (providers/ses) through every answer SES can
// give. It serves POST /v2/email/outbound-emails, answers {"MessageId": ...} or an error
// {"__type": ..., "message": ...} with the scripted status, and records every request.
//
// Scripting, per request: Enqueue replies (then SetDefault or Func); a Reply can set the
// status, the error type and message, a Retry-After header, Hang (read the request and
// never answer: "written, no answer") or Drop (close the connection). Refuse closes the
// listener (connection refused: the request is never written) and Resume reopens it on
// the same port, so a Caddyfile pointing at URL() keeps working.
//
//	srv := sesfake.New()
//	defer srv.Close()
//	srv.Enqueue(sesfake.Throttling(), sesfake.Reply{}) // first throttled, then sent
//	... endpoint srv.URL() ...
//	srv.Sent() // the emails answered with 200, decoded
package sesfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/formoutbox/caddy-form-outbox/providers/internal/fakehttp"
)

// Path is where SES v2 SendEmail is posted.
const Path = "/v2/email/outbound-emails"

// AccountPath is where SES v2 GetAccount is asked (a GET).
const AccountPath = "/v2/email/account"

// Request is one recorded HTTP request, with headers (the SigV4 Authorization among
// them) and raw body.
type Request = fakehttp.Request

// Reply scripts the answer to one request. The zero Reply is a success (200 with a new
// MessageId).
type Reply struct {
	// Status is the HTTP status; 0 means 200, or 400 when Type is set.
	Status int
	// Type is the error's __type, e.g. "MessageRejected"; also sent as X-Amzn-ErrorType.
	Type    string
	Message string
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Hang reads the request and never answers, until the client gives up.
	Hang bool
	// Drop reads the request and closes the connection without answering.
	Drop bool
}

// Common SES errors, with the status SES answers them with.
func Throttling() Reply {
	return Reply{Status: 429, Type: "TooManyRequestsException", Message: "Maximum sending rate exceeded."}
}
func LimitExceeded() Reply {
	return Reply{Status: 400, Type: "LimitExceededException", Message: "Daily message quota exceeded."}
}
func SendingPaused() Reply {
	return Reply{Status: 400, Type: "SendingPausedException", Message: "Sending is paused for this account."}
}
func AccountSuspended() Reply {
	return Reply{Status: 400, Type: "AccountSuspendedException", Message: "The account is suspended."}
}
func MailFromNotVerified() Reply {
	return Reply{Status: 400, Type: "MailFromDomainNotVerifiedException", Message: "MAIL FROM domain not verified."}
}
func NotVerified() Reply {
	return Reply{Status: 400, Type: "MessageRejected", Message: "Email address is not verified. The following identities failed the check in region EU-WEST-1: forms@example.com"}
}
func Rejected() Reply {
	return Reply{Status: 400, Type: "MessageRejected", Message: "Illegal header in message."}
}
func BadRequest() Reply {
	return Reply{Status: 400, Type: "BadRequestException", Message: "1 validation error detected."}
}
func ConfigSetNotFound() Reply {
	return Reply{Status: 404, Type: "NotFoundException", Message: "Configuration set <forms> does not exist."}
}
func InternalError() Reply {
	return Reply{Status: 500, Type: "InternalServiceErrorException", Message: "Internal failure."}
}
func Unavailable() Reply {
	return Reply{Status: 503, Type: "ServiceUnavailable", Message: "Service unavailable."}
}

// Email is the decoded SendEmail body (the fields the providers use).
type Email struct {
	FromEmailAddress     string
	ReplyToAddresses     []string
	ConfigurationSetName string
	Destination          struct{ ToAddresses []string }
	Content              struct {
		// Raw is the whole MIME message (SES v2 sends it base64 in JSON): what the
		// provider sends for an email with attachments.
		Raw struct {
			Data []byte
		}
		Simple struct {
			Subject struct{ Data, Charset string }
			Body    struct {
				Text, Html struct{ Data, Charset string }
			}
		}
	}
	EmailTags []struct{ Name, Value string }
}

// Tag returns the value of the EmailTag named name.
func (e Email) Tag(name string) string {
	for _, t := range e.EmailTags {
		if t.Name == name {
			return t.Value
		}
	}
	return ""
}

// Sent is one email answered with 200.
type Sent struct {
	MessageID string
	Email     Email
	Request   Request
}

// Server is the fake. Safe for concurrent use.
type Server struct {
	fakehttp.Script[Reply]
	*fakehttp.Server // Requests, Count, WaitCount, URL, Refuse, Resume, Close
	ids              atomic.Int64
	sent             fakehttp.Log[Sent]
	quota            atomic.Pointer[fakehttp.Quota]
	paused           atomic.Bool
}

// PauseSending makes GetAccount answer SendingEnabled false, as for an account AWS
// paused (the script still decides what sends get).
func (s *Server) PauseSending(paused bool) { s.paused.Store(paused) }

// New starts a fake SES on a free loopback port. It panics if it cannot listen.
func New() *Server {
	s := new(Server)
	srv, err := fakehttp.New(s.handle)
	if err != nil {
		panic(err)
	}
	s.Server = srv
	return s
}

// EnforceRate refuses requests beyond perSecond sustained (a second's burst allowed) as
// SES answers TooManyRequestsException (429) past the account's maximum send rate, before the script is asked.
func (s *Server) EnforceRate(perSecond float64) { s.quota.Store(fakehttp.NewQuota(perSecond)) }

// Throttled is how many requests EnforceRate refused.
func (s *Server) Throttled() int {
	if q := s.quota.Load(); q != nil {
		return q.Refused()
	}
	return 0
}

// URL is the endpoint to configure (`endpoint` / ses.Config.Endpoint).
func (s *Server) URL() string { return s.Server.URL() }

func (s *Server) handle(n int, r Request) (fakehttp.Action, int, http.Header, []byte) {
	if r.Method == http.MethodGet && r.Path == AccountPath {
		return fakehttp.Answer, http.StatusOK, http.Header{"Content-Type": {"application/json"}}, fakehttp.JSON(map[string]any{
			"SendingEnabled": !s.paused.Load(), "ProductionAccessEnabled": true, "EnforcementStatus": "HEALTHY"})
	}
	if r.Method != http.MethodPost || r.Path != Path {
		return errorAnswer(Reply{Status: 404, Type: "UnknownOperationException", Message: "no such operation " + r.Method + " " + r.Path})
	}
	if q := s.quota.Load(); q != nil && !q.Allow(r.At) {
		return errorAnswer(Throttling())
	}
	reply := s.Next(n, r)
	switch {
	case reply.Hang:
		return fakehttp.Hang, 0, nil, nil
	case reply.Drop:
		return fakehttp.Drop, 0, nil, nil
	case reply.Type != "" || reply.Status >= 300:
		return errorAnswer(reply)
	}
	var e Email
	if err := json.Unmarshal(r.Body, &e); err != nil {
		return errorAnswer(Reply{Status: 400, Type: "BadRequestException", Message: "body is not JSON: " + err.Error()})
	}
	id := fmt.Sprintf("0100018c-fake-ses-%06d", s.ids.Add(1))
	s.sent.Add(Sent{MessageID: id, Email: e, Request: r})
	h := http.Header{"Content-Type": {"application/json"}}
	if reply.RetryAfter != "" {
		h.Set("Retry-After", reply.RetryAfter)
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	return fakehttp.Answer, status, h, fakehttp.JSON(map[string]string{"MessageId": id})
}

func errorAnswer(r Reply) (fakehttp.Action, int, http.Header, []byte) {
	status := r.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	typ := r.Type
	if typ == "" {
		typ = "InternalFailure"
	}
	h := http.Header{"Content-Type": {"application/json"}, "X-Amzn-Errortype": {typ}}
	if r.RetryAfter != "" {
		h.Set("Retry-After", r.RetryAfter)
	}
	return fakehttp.Answer, status, h, fakehttp.JSON(map[string]string{"__type": typ, "message": r.Message})
}

// Sent returns the emails answered with 200, in order.
func (s *Server) Sent() []Sent { return s.sent.All() }
