// Package slackfake is a local stand-in for a Slack incoming webhook that speaks its wire
// format, for tests of providers/slack. It serves POST on one webhook path, answers
// 200 "ok" or a plain-text error code ("invalid_payload", "channel_is_archived") with
// its status, and records every request.
//
// Like Slack it refuses a body that is not JSON, one with neither text nor blocks, and a
// section text over 3000 characters; an accepted message records its mrkdwn and every
// <...> sequence in it, which is where Slack finds mentions (<!channel>, <@U1>) and links.
// Scripting as in the other fakes: Enqueue, SetDefault, Func; Hang, Drop; Refuse, Resume.
package slackfake

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf16"

	"github.com/formoutbox/caddy-form-outbox/providers/internal/fakehttp"
)

// Path is the webhook path the fake serves; URL() includes it.
const Path = "/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"

// Request is one recorded HTTP request.
type Request = fakehttp.Request

// Reply scripts the answer to one request. The zero Reply is a success.
type Reply struct {
	Status int    // 0 means 200
	Code   string // the plain-text body of an error answer
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	Hang       bool
	Drop       bool
}

// Slack's webhook refusals, with the status it answers them with.
func InvalidPayload() Reply    { return Reply{Status: 400, Code: "invalid_payload"} }
func ActionProhibited() Reply  { return Reply{Status: 403, Code: "action_prohibited"} }
func NoService() Reply         { return Reply{Status: 404, Code: "no_service"} }
func ChannelNotFound() Reply   { return Reply{Status: 404, Code: "channel_not_found"} }
func ChannelIsArchived() Reply { return Reply{Status: 410, Code: "channel_is_archived"} }
func RateLimited(retryAfter string) Reply {
	return Reply{Status: 429, Code: "rate_limited", RetryAfter: retryAfter}
}
func ServerError() Reply { return Reply{Status: 500, Code: "rollup_error"} }

// Sent is one accepted message.
type Sent struct {
	Text     string
	Sections []string // the mrkdwn of each section block
	Contexts []string // the mrkdwn of each context element
	// Unfurl is whether links or media would be unfurled (previewed).
	Unfurl bool
	// Specials lists every <...> sequence in any mrkdwn: what Slack would turn into a
	// mention or a link.
	Specials []string
	Request
}

// Server is the fake. Safe for concurrent use.
type Server struct {
	fakehttp.Script[Reply]
	*fakehttp.Server
	sent fakehttp.Log[Sent]
}

// New starts a fake webhook on a free loopback port. It panics if it cannot listen.
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
	Text   string `json:"text"`
	Blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"elements"`
	} `json:"blocks"`
	UnfurlLinks *bool `json:"unfurl_links"`
	UnfurlMedia *bool `json:"unfurl_media"`
}

var special = regexp.MustCompile(`<[^<>]*>`)

func (s *Server) handle(n int, r Request) (fakehttp.Action, int, http.Header, []byte) {
	if r.Method != http.MethodPost || r.Path != Path {
		return answer(NoService())
	}
	reply := s.Next(n, r)
	if act, ok := fakehttp.Unanswered(reply.Hang, reply.Drop); ok {
		return act, 0, nil, nil
	}
	if reply.Status >= 300 {
		return answer(reply)
	}
	var b body
	if json.Unmarshal(r.Body, &b) != nil {
		return answer(InvalidPayload())
	}
	if b.Text == "" && len(b.Blocks) == 0 {
		return answer(Reply{Status: 400, Code: "no_text"})
	}
	// Slack unfurls text links by default and media always unless told otherwise.
	sent := Sent{Text: b.Text, Request: r, Unfurl: b.UnfurlLinks == nil || *b.UnfurlLinks || b.UnfurlMedia == nil || *b.UnfurlMedia}
	mrkdwn := []string{b.Text}
	for _, bl := range b.Blocks {
		switch {
		case bl.Type == "section" && bl.Text != nil && bl.Text.Text != "" && len(utf16.Encode([]rune(bl.Text.Text))) <= 3000:
			sent.Sections = append(sent.Sections, bl.Text.Text)
			mrkdwn = append(mrkdwn, bl.Text.Text)
		case bl.Type == "context" && len(bl.Elements) > 0:
			for _, e := range bl.Elements {
				sent.Contexts = append(sent.Contexts, e.Text)
				mrkdwn = append(mrkdwn, e.Text)
			}
		default:
			return answer(Reply{Status: 400, Code: "invalid_blocks"})
		}
	}
	for _, t := range mrkdwn {
		sent.Specials = append(sent.Specials, special.FindAllString(t, -1)...)
	}
	s.sent.Add(sent)
	return fakehttp.Answer, http.StatusOK, http.Header{"Content-Type": {"text/html"}}, []byte("ok")
}

func answer(r Reply) (fakehttp.Action, int, http.Header, []byte) {
	h := http.Header{"Content-Type": {"text/html"}}
	if r.RetryAfter != "" {
		h.Set("Retry-After", r.RetryAfter)
	}
	return fakehttp.Answer, r.Status, h, []byte(r.Code)
}

// Unescape turns mrkdwn's three escapes back into the characters a reader sees.
func Unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}
