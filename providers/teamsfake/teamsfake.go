// Package teamsfake is a local stand-in for a Teams Workflows (Power Automate) webhook
// that speaks its wire format, for tests of providers/teams. It serves POST on one
// trigger path with a sig query parameter, answers 202 Accepted or
// {"error":{"code","message"}} with the status, and records every request.
//
// Like the service it refuses a wrong signature (401), a body that is not a message
// with one Adaptive Card attachment (400) and one over 28 KB (413); an accepted card
// records its text blocks as a reader sees them, their bold texts and links, and its
// button URLs. Scripting as in the other fakes: Enqueue, SetDefault, Func; Hang, Drop;
// Refuse, Resume.
package teamsfake

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/formoutbox/caddy-form-outbox/providers/internal/fakehttp"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/fakemarkdown"
)

// Path is the trigger path the fake serves; URL() includes it and the signature.
const Path = "/workflows/0a1b2c3d/triggers/manual/paths/invoke"

// Sig is the signature the fake requires; it is the secret part of a Workflows URL.
const Sig = "the-workflow-signature-secret"

// MaxBody is the largest message the fake takes, as Teams does.
const MaxBody = 28 << 10

// Request is one recorded HTTP request.
type Request = fakehttp.Request

// Reply scripts the answer to one request. The zero Reply is a success.
type Reply struct {
	Status  int // 0 means 202
	Code    string
	Message string
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	Hang       bool
	Drop       bool
}

// The service's refusals, with the status it answers them with.
func BadRequest() Reply {
	return Reply{Status: 400, Code: "InvalidRequestContent", Message: "The input body for trigger 'manual' of type 'Request' must be of type JSON."}
}
func Unauthorized() Reply {
	return Reply{Status: 401, Code: "DirectApiAuthorizationRequired", Message: "The request must be authenticated."}
}
func WorkflowNotFound() Reply {
	return Reply{Status: 404, Code: "WorkflowNotFound", Message: "The workflow could not be found."}
}
func TooManyRequests(retryAfter string) Reply {
	return Reply{Status: 429, Code: "WorkflowRequestsThrottled", Message: "Rate limit reached.", RetryAfter: retryAfter}
}
func ServiceUnavailable() Reply {
	return Reply{Status: 503, Code: "ServiceUnavailable", Message: "The service is unavailable."}
}

// Block is one TextBlock of an accepted card.
type Block struct {
	Text    string // as sent
	Visible string // as a reader sees it
	Bold    []string
	Links   []string
}

// Sent is one accepted card.
type Sent struct {
	Blocks  []Block
	Buttons []string // the url of every Action.OpenUrl
	Request
}

// Server is the fake. Safe for concurrent use.
type Server struct {
	fakehttp.Script[Reply]
	*fakehttp.Server
	sent fakehttp.Log[Sent]
}

// New starts a fake Workflows webhook on a free loopback port. It panics if it cannot
// listen.
func New() *Server {
	s := &Server{}
	s.Server = fakehttp.MustNew(s.handle)
	return s
}

// URL is the webhook URL to configure, signature included.
func (s *Server) URL() string {
	return s.Server.URL() + Path + "?api-version=1&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=" + Sig
}

// Cards returns the accepted cards, in order.
func (s *Server) Cards() []Sent { return s.sent.All() }

type message struct {
	Type        string `json:"type"`
	Attachments []struct {
		ContentType string `json:"contentType"`
		Content     struct {
			Type string `json:"type"`
			Body []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"body"`
			Actions []struct {
				Type string `json:"type"`
				URL  string `json:"url"`
			} `json:"actions"`
		} `json:"content"`
	} `json:"attachments"`
}

func (s *Server) handle(n int, r Request) (fakehttp.Action, int, http.Header, []byte) {
	q, _ := url.ParseQuery(r.Query)
	switch {
	case r.Method != http.MethodPost || r.Path != Path:
		return refuse(WorkflowNotFound())
	case q.Get("sig") != Sig:
		return refuse(Unauthorized())
	}
	reply := s.Next(n, r)
	if act, ok := fakehttp.Unanswered(reply.Hang, reply.Drop); ok {
		return act, 0, nil, nil
	}
	if reply.Status >= 300 {
		return refuse(reply)
	}
	if len(r.Body) > MaxBody {
		return refuse(Reply{Status: 413, Code: "MessageSizeTooBig", Message: "The message is too big."})
	}
	var m message
	if json.Unmarshal(r.Body, &m) != nil || m.Type != "message" || len(m.Attachments) != 1 ||
		m.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" ||
		m.Attachments[0].Content.Type != "AdaptiveCard" || len(m.Attachments[0].Content.Body) == 0 {
		return refuse(BadRequest())
	}
	sent := Sent{Request: r}
	for _, b := range m.Attachments[0].Content.Body {
		if b.Type != "TextBlock" || b.Text == "" {
			return refuse(BadRequest())
		}
		blk := Block{Text: b.Text}
		blk.Visible, blk.Bold, blk.Links, _ = fakemarkdown.Read(b.Text)
		sent.Blocks = append(sent.Blocks, blk)
	}
	for _, a := range m.Attachments[0].Content.Actions {
		sent.Buttons = append(sent.Buttons, a.URL)
	}
	s.sent.Add(sent)
	return fakehttp.Answer, http.StatusAccepted, nil, nil
}

func refuse(r Reply) (fakehttp.Action, int, http.Header, []byte) {
	h := http.Header{"Content-Type": {"application/json"}}
	if r.RetryAfter != "" {
		h.Set("Retry-After", r.RetryAfter)
	}
	return fakehttp.Answer, r.Status, h, fakehttp.JSON(map[string]any{"error": map[string]string{"code": r.Code, "message": r.Message}})
}
