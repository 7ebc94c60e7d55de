// Package discordfake is a local stand-in for Discord's execute-webhook endpoint that
// speaks its wire format, for tests of providers/discord. It serves
// POST /api/webhooks/{id}/{token}; with ?wait=true it answers 200 and the message
// object (with its id), without it 204; errors are {"code","message"} with the status,
// and 429 carries retry_after (seconds, fractional) and Retry-After.
//
// Like Discord it refuses an empty content or one over 2000 characters. An accepted
// message records the text a reader sees (backslash escapes removed), its bold texts,
// its links and mentions, and which mentions would ping given allowed_mentions.
// Scripting as in the other fakes: Enqueue, SetDefault, Func; Hang, Drop; Refuse, Resume.
package discordfake

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"unicode/utf16"

	"github.com/formoutbox/caddy-form-outbox/providers/internal/fakehttp"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/fakemarkdown"
)

// Path is the webhook path the fake serves; URL() includes it.
const Path = "/api/webhooks/1234567890/the-webhook-token-secret"

// Request is one recorded HTTP request.
type Request = fakehttp.Request

// Reply scripts the answer to one request. The zero Reply is a success.
type Reply struct {
	Status  int // 0 means 200 (204 without wait=true)
	Code    int // Discord's JSON error code
	Message string
	// RetryAfter is sent in the body as retry_after and, rounded up, as Retry-After.
	RetryAfter float64
	Hang       bool
	Drop       bool
}

// Discord's webhook refusals, with the status it answers them with.
func UnknownWebhook() Reply { return Reply{Status: 404, Code: 10015, Message: "Unknown Webhook"} }
func InvalidToken() Reply   { return Reply{Status: 401, Code: 50027, Message: "Invalid Webhook Token"} }
func InvalidFormBody() Reply {
	return Reply{Status: 400, Code: 50035, Message: "Invalid Form Body"}
}
func RateLimited(seconds float64) Reply {
	return Reply{Status: 429, Message: "You are being rate limited.", RetryAfter: seconds}
}
func ServerError() Reply { return Reply{Status: 502, Message: "502 Bad Gateway"} }

// Sent is one accepted message.
type Sent struct {
	ID      string
	Content string
	Flags   int
	// Visible is the content as a reader sees it.
	Visible  string
	Bold     []string
	Links    []string // masked links and <url> links
	Mentions []string // @everyone, @here, <@id>, <@&id>, <#id> outside escapes
	Pings    []string // the mentions allowed_mentions lets notify someone
	Request
}

// Server is the fake. Safe for concurrent use.
type Server struct {
	fakehttp.Script[Reply]
	*fakehttp.Server
	ids  atomic.Int64
	sent fakehttp.Log[Sent]
}

// New starts a fake Discord webhook on a free loopback port. It panics if it cannot
// listen.
func New() *Server {
	s := &Server{}
	s.Server = fakehttp.MustNew(s.handle)
	return s
}

// URL is the webhook URL to configure.
func (s *Server) URL() string { return s.Server.URL() + Path }

// Messages returns the accepted messages, in order.
func (s *Server) Messages() []Sent { return s.sent.All() }

type body struct {
	Content         string `json:"content"`
	Flags           int    `json:"flags"`
	AllowedMentions *struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
}

func (s *Server) handle(n int, r Request) (fakehttp.Action, int, http.Header, []byte) {
	if r.Method != http.MethodPost || r.Path != Path {
		return refuse(UnknownWebhook())
	}
	reply := s.Next(n, r)
	if act, ok := fakehttp.Unanswered(reply.Hang, reply.Drop); ok {
		return act, 0, nil, nil
	}
	if reply.Status >= 300 {
		return refuse(reply)
	}
	var b body
	if json.Unmarshal(r.Body, &b) != nil {
		return refuse(Reply{Status: 400, Code: 50109, Message: "The request body contains invalid JSON."})
	}
	switch l := len(utf16.Encode([]rune(b.Content))); {
	case strings.TrimSpace(b.Content) == "":
		return refuse(Reply{Status: 400, Code: 50006, Message: "Cannot send an empty message"})
	case l > 2000:
		return refuse(InvalidFormBody())
	}
	sent := Sent{ID: fmt.Sprintf("11%017d", s.ids.Add(1)), Content: b.Content, Flags: b.Flags, Request: r}
	sent.Visible, sent.Bold, sent.Links, sent.Mentions = fakemarkdown.Read(b.Content)
	// Without allowed_mentions Discord parses every kind of mention; with it, only the
	// kinds listed in parse.
	for _, m := range sent.Mentions {
		if b.AllowedMentions == nil || allowed(b.AllowedMentions.Parse, m) {
			sent.Pings = append(sent.Pings, m)
		}
	}
	s.sent.Add(sent)
	q, _ := url.ParseQuery(r.Query)
	if q.Get("wait") != "true" {
		return fakehttp.Answer, http.StatusNoContent, nil, nil
	}
	return fakehttp.Answer, http.StatusOK, http.Header{"Content-Type": {"application/json"}},
		fakehttp.JSON(map[string]any{"id": sent.ID, "type": 0, "content": b.Content, "channel_id": "2222"})
}

func allowed(parse []string, mention string) bool {
	kind := "users"
	switch {
	case mention == "@everyone" || mention == "@here":
		kind = "everyone"
	case strings.HasPrefix(mention, "<@&"):
		kind = "roles"
	case strings.HasPrefix(mention, "<#"):
		return false // channel links never notify
	}
	for _, p := range parse {
		if p == kind {
			return true
		}
	}
	return false
}

func refuse(r Reply) (fakehttp.Action, int, http.Header, []byte) {
	h := http.Header{"Content-Type": {"application/json"}}
	body := map[string]any{"code": r.Code, "message": r.Message}
	if r.Status == http.StatusTooManyRequests {
		h.Set("Retry-After", fmt.Sprint(math.Ceil(r.RetryAfter)))
		body = map[string]any{"message": r.Message, "retry_after": r.RetryAfter, "global": false}
	}
	return fakehttp.Answer, r.Status, h, fakehttp.JSON(body)
}
