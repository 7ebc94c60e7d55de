// Package telegramfake is a local stand-in for the Telegram Bot API's sendMessage that
// speaks its wire format, for tests of providers/telegram. It serves
// POST /bot<token>/sendMessage, answers {"ok":true,"result":{"message_id":N,...}} or
// {"ok":false,"error_code":N,"description":"...","parameters":{...}} with that status,
// and records every request.
//
// Like Telegram it refuses a wrong token (401), a text longer than 4096 characters after
// entities are parsed and, in parse_mode HTML, markup it cannot parse ("can't parse
// entities"); an accepted message records the text a reader would see. Scripting, per
// request: Enqueue replies (then SetDefault or Func); Hang and Drop leave a request
// unanswered; Refuse and Resume close and reopen the listener.
//
//	srv := telegramfake.New("123:secret")
//	defer srv.Close()
//	srv.Enqueue(telegramfake.BotBlocked())
//	... Bot{Token: "123:secret", Endpoint: srv.URL()} ...
//	srv.Messages() // what the chat shows
package telegramfake

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf16"

	"github.com/formoutbox/caddy-form-outbox/providers/internal/fakehttp"
)

// Request is one recorded HTTP request.
type Request = fakehttp.Request

// Reply scripts the answer to one request. The zero Reply is a success.
type Reply struct {
	// Status is the HTTP status and error_code; 0 means 200.
	Status      int
	Description string
	// RetryAfter is sent as parameters.retry_after (seconds), as Telegram does on 429.
	RetryAfter int
	// MigrateTo is sent as parameters.migrate_to_chat_id (a group became a supergroup).
	MigrateTo int64
	Hang      bool
	Drop      bool
}

// Telegram's common refusals, with the status it answers them with.
func ChatNotFound() Reply { return Reply{Status: 400, Description: "Bad Request: chat not found"} }
func BotBlocked() Reply {
	return Reply{Status: 403, Description: "Forbidden: bot was blocked by the user"}
}
func BotKicked() Reply {
	return Reply{Status: 403, Description: "Forbidden: bot was kicked from the group chat"}
}
func TooManyRequests(seconds int) Reply {
	return Reply{Status: 429, Description: fmt.Sprintf("Too Many Requests: retry after %d", seconds), RetryAfter: seconds}
}
func Migrated(to int64) Reply {
	return Reply{Status: 400, Description: "Bad Request: group chat was upgraded to a supergroup chat", MigrateTo: to}
}
func InternalError() Reply { return Reply{Status: 500, Description: "Internal Server Error"} }
func BadGateway() Reply    { return Reply{Status: 502, Description: "Bad Gateway"} }

// SendMessage is the decoded request body.
type SendMessage struct {
	ChatID             string `json:"chat_id"`
	Text               string `json:"text"`
	ParseMode          string `json:"parse_mode"`
	LinkPreviewOptions struct {
		IsDisabled bool `json:"is_disabled"`
	} `json:"link_preview_options"`
}

// Sent is one accepted message.
type Sent struct {
	MessageID int64
	Message   SendMessage
	// Visible is the text a reader sees: tags removed, entities decoded.
	Visible string
	// Bold lists the texts shown in bold, Links the href of every link.
	Bold  []string
	Links []string
	Request
}

// Server is the fake. Safe for concurrent use.
type Server struct {
	fakehttp.Script[Reply]
	*fakehttp.Server
	token string
	ids   atomic.Int64
	sent  fakehttp.Log[Sent]
	// kicked holds the chats the bot was removed from (Kick): getChat refuses them.
	kicked sync.Map
}

// Kick removes the bot from chatID, as an admin of the group would: getChat then
// answers 403 "Forbidden: bot was kicked from the group chat" (the script still
// decides what sendMessage gets).
func (s *Server) Kick(chatID string) { s.kicked.Store(chatID, true) }

// New starts a fake Bot API for one bot token on a free loopback port. It panics if it
// cannot listen.
func New(token string) *Server {
	s := &Server{token: token}
	s.Server = fakehttp.MustNew(s.handle)
	return s
}

// URL is the endpoint to configure (telegram.Bot.Endpoint).
func (s *Server) URL() string { return s.Server.URL() }

// Messages returns the accepted messages, in order.
func (s *Server) Messages() []Sent { return s.sent.All() }

func (s *Server) handle(n int, r Request) (fakehttp.Action, int, http.Header, []byte) {
	token, method, ok := strings.Cut(strings.TrimPrefix(r.Path, "/bot"), "/")
	switch {
	case !strings.HasPrefix(r.Path, "/bot") || !ok || (method != "sendMessage" && method != "getMe" && method != "getChat") || r.Method != http.MethodPost:
		return refuse(Reply{Status: 404, Description: "Not Found"})
	case token != s.token:
		return refuse(Reply{Status: 401, Description: "Unauthorized"})
	case method == "getMe": // who the bot is; the script is for messages
		return fakehttp.Answer, http.StatusOK, http.Header{"Content-Type": {"application/json"}}, fakehttp.JSON(map[string]any{
			"ok": true, "result": map[string]any{"id": 1, "is_bot": true, "username": "fake_bot"}})
	case method == "getChat": // the chat, while the bot is in it
		var q struct {
			ChatID string `json:"chat_id"`
		}
		if json.Unmarshal(r.Body, &q) != nil || q.ChatID == "" {
			return refuse(Reply{Status: 400, Description: "Bad Request: chat_id is empty"})
		}
		if _, gone := s.kicked.Load(q.ChatID); gone {
			return refuse(BotKicked())
		}
		return fakehttp.Answer, http.StatusOK, http.Header{"Content-Type": {"application/json"}}, fakehttp.JSON(map[string]any{
			"ok": true, "result": map[string]any{"id": q.ChatID, "type": "supergroup"}})
	}
	reply := s.Next(n, r)
	if act, ok := fakehttp.Unanswered(reply.Hang, reply.Drop); ok {
		return act, 0, nil, nil
	}
	if reply.Status >= 300 {
		return refuse(reply)
	}
	var m SendMessage
	if err := json.Unmarshal(r.Body, &m); err != nil {
		return refuse(Reply{Status: 400, Description: "Bad Request: can't parse JSON"})
	}
	if m.ChatID == "" {
		return refuse(Reply{Status: 400, Description: "Bad Request: chat_id is empty"})
	}
	sent := Sent{Message: m, Visible: m.Text, Request: r}
	if m.ParseMode == "HTML" {
		var err error
		if sent.Visible, sent.Bold, sent.Links, err = parseHTML(m.Text); err != nil {
			return refuse(Reply{Status: 400, Description: "Bad Request: can't parse entities: " + err.Error()})
		}
	}
	switch l := len(utf16.Encode([]rune(sent.Visible))); {
	case strings.TrimSpace(sent.Visible) == "":
		return refuse(Reply{Status: 400, Description: "Bad Request: message text is empty"})
	case l > 4096:
		return refuse(Reply{Status: 400, Description: "Bad Request: message is too long"})
	}
	sent.MessageID = s.ids.Add(1)
	s.sent.Add(sent)
	return fakehttp.Answer, http.StatusOK, http.Header{"Content-Type": {"application/json"}}, fakehttp.JSON(map[string]any{
		"ok": true, "result": map[string]any{"message_id": sent.MessageID, "chat": map[string]any{"id": m.ChatID}, "text": sent.Visible},
	})
}

func refuse(r Reply) (fakehttp.Action, int, http.Header, []byte) {
	params := map[string]any{}
	if r.RetryAfter > 0 {
		params["retry_after"] = r.RetryAfter
	}
	if r.MigrateTo != 0 {
		params["migrate_to_chat_id"] = r.MigrateTo
	}
	body := map[string]any{"ok": false, "error_code": r.Status, "description": r.Description}
	if len(params) > 0 {
		body["parameters"] = params
	}
	return fakehttp.Answer, r.Status, http.Header{"Content-Type": {"application/json"}}, fakehttp.JSON(body)
}

// Telegram's HTML mode knows a handful of tags and the entities &lt; &gt; &amp; &quot;
// and numeric ones; anything else is refused, as the real API refuses it.
var (
	tagRE    = regexp.MustCompile(`^<(/?)(b|strong|i|em|u|ins|s|strike|del|code|pre|blockquote|a)(\s+href="([^"]*)")?>`)
	entityRE = regexp.MustCompile(`^&(lt|gt|amp|quot|#[0-9]+|#x[0-9a-fA-F]+);`)
)

// parseHTML returns the visible text of Telegram HTML, the bold texts and the links.
func parseHTML(s string) (visible string, bold, links []string, err error) {
	var out, cur strings.Builder
	var open []string
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			m := tagRE.FindStringSubmatch(s[i:])
			if m == nil {
				return "", nil, nil, fmt.Errorf("unsupported start tag at byte offset %d", i)
			}
			if m[1] == "" {
				if m[2] == "a" {
					links = append(links, html.UnescapeString(m[4]))
				}
				if m[2] == "b" || m[2] == "strong" {
					cur.Reset()
				}
				open = append(open, m[2])
			} else {
				if len(open) == 0 || open[len(open)-1] != m[2] {
					return "", nil, nil, fmt.Errorf("unmatched end tag at byte offset %d", i)
				}
				open = open[:len(open)-1]
				if m[2] == "b" || m[2] == "strong" {
					bold = append(bold, cur.String())
				}
			}
			i += len(m[0])
		case '&':
			m := entityRE.FindString(s[i:])
			if m == "" {
				return "", nil, nil, fmt.Errorf("unsupported entity at byte offset %d", i)
			}
			d := html.UnescapeString(m)
			out.WriteString(d)
			cur.WriteString(d)
			i += len(m)
		case '>':
			return "", nil, nil, fmt.Errorf("unexpected end of tag at byte offset %d", i)
		default:
			out.WriteByte(s[i])
			cur.WriteByte(s[i])
			i++
		}
	}
	if len(open) > 0 {
		return "", nil, nil, fmt.Errorf("can't find end tag corresponding to start tag %q", open[len(open)-1])
	}
	return out.String(), bold, links, nil
}
