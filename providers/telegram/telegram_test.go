package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
	"github.com/formoutbox/caddy-form-outbox/providers/telegram"
	"github.com/formoutbox/caddy-form-outbox/providers/telegramfake"
)

const (
	token  = "123456:AAE-the-bot-token-secret"
	chatID = "-100123"
)

func newProvider(t *testing.T, fake *telegramfake.Server, timeout time.Duration) *telegram.Provider {
	t.Helper()
	p, err := telegram.New(telegram.Config{Config: chat.Config{Timeout: timeout}, Bot: func(id string) (telegram.Bot, bool) {
		return telegram.Bot{Token: token, Endpoint: fake.URL()}, id == chatID
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func submission(fields ...chat.Field) chat.Submission {
	return chat.Submission{Form: "contact", ID: "0190d0c4-7a1b-7c3e-9f00-000000000001",
		Received: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Fields: fields,
		Link: "https://example.com/inbox/0190d0c4?a=1&b=2"}
}

func message(t *testing.T, s chat.Submission) providers.Message {
	t.Helper()
	body, err := telegram.Render(chatID, s)
	if err != nil {
		t.Fatal(err)
	}
	return providers.Message{ID: "0190d0c4-7a1b-7c3e-9f00-0000000000d1", Channel: "telegram", To: chatID, Body: body}
}

// noToken fails the test when the bot token shows in anything a send returns, which is
// what reaches the attempt history and the logs.
func noToken(t *testing.T, res providers.Result, err error) {
	t.Helper()
	texts := []string{fmt.Sprintf("%+v", res)}
	if err != nil {
		texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
		if pe := providers.Classify(err); pe.Err != nil {
			texts = append(texts, pe.Code, pe.Err.Error())
		}
	}
	for _, s := range texts {
		if strings.Contains(s, token) || strings.Contains(s, "AAE-the-bot") {
			t.Fatalf("the bot token leaked: %q", s)
		}
	}
}

func TestSendsTheRenderedMessage(t *testing.T) {
	fake := telegramfake.New(token)
	defer fake.Close()
	m := message(t, submission(chat.Field{Name: "name", Value: "Zoë"}, chat.Field{Name: "message", Value: "Hello\nthere"}))
	if bytes.Contains(m.Body, []byte(token)) {
		t.Fatal("the stored payload holds the token")
	}
	p := newProvider(t, fake, 0)
	res, err := p.Send(context.Background(), m)
	noToken(t, res, err)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if _, err := p.Send(context.Background(), m); err != nil { // a retry
		t.Fatalf("second send: %v", err)
	}
	got := fake.Messages()
	if len(got) != 2 || !bytes.Equal(got[0].Body, m.Body) || !bytes.Equal(got[1].Body, m.Body) {
		t.Fatalf("the fake got %d messages; want two with the rendered bytes", len(got))
	}
	if res.Provider != "telegram" || res.MessageID != "1" {
		t.Fatalf("result %+v, want provider telegram and message id 1", res)
	}
	sm := got[0].Message
	if sm.ChatID != chatID || sm.ParseMode != "HTML" || !sm.LinkPreviewOptions.IsDisabled {
		t.Fatalf("sendMessage = %+v, want chat %s, HTML, link previews off", sm, chatID)
	}
	// Each value is isolated (U+2068 ... U+2069, providers/chat/chat.go).
	want := "New submission to form contact\n\nname: \u2068Zoë\u2069\nmessage: \u2068Hello\nthere\u2069\n\n" +
		"Submission 0190d0c4-7a1b-7c3e-9f00-000000000001, received 2025-03-01T12:00:00Z\nOpen in the inbox"
	if got[0].Visible != want {
		t.Fatalf("visible text\n%q\nwant\n%q", got[0].Visible, want)
	}
	if len(got[0].Links) != 1 || got[0].Links[0] != "https://example.com/inbox/0190d0c4?a=1&b=2" {
		t.Fatalf("links %q, want only the inbox link", got[0].Links)
	}
}

func TestVisitorMarkupArrivesAsText(t *testing.T) {
	fake := telegramfake.New(token)
	defer fake.Close()
	hostile := []string{`<a href="https://evil.example">click</a>`, "<b>bold</b> & <i>", "&amp; &lt;", "@everyone <!channel>", "*_[x](y)`~"}
	var fields []chat.Field
	for i, v := range hostile {
		fields = append(fields, chat.Field{Name: fmt.Sprintf("f%d<b>", i), Value: v})
	}
	s := submission(fields...)
	s.Link = ""
	res, err := newProvider(t, fake, 0).Send(context.Background(), message(t, s))
	noToken(t, res, err)
	if err != nil {
		t.Fatalf("send: %v (the fake refuses markup it cannot parse)", err)
	}
	got := fake.Messages()[0]
	for i, v := range hostile {
		if line := fmt.Sprintf("f%d<b>: \u2068%s\u2069", i, v); !strings.Contains(got.Visible, line) {
			t.Errorf("visible text lacks %q:\n%s", line, got.Visible)
		}
	}
	if len(got.Links) != 0 {
		t.Errorf("visitor text made links: %q", got.Links)
	}
	if len(got.Bold) != 1+len(hostile) || got.Bold[0] != "New submission to form contact" {
		t.Errorf("bold texts %q, want the title and the field names only", got.Bold)
	}
}

func TestLongMessageIsCutWithANote(t *testing.T) {
	fake := telegramfake.New(token)
	defer fake.Close()
	// Escaped '<' is four times longer than it shows, the emoji is two UTF-16 units: the
	// cut must count what Telegram counts and never split an escape.
	long := strings.Repeat("a<😀", 3000)
	m := message(t, submission(chat.Field{Name: "message", Value: long}, chat.Field{Name: "after", Value: "x"}))
	res, err := newProvider(t, fake, 0).Send(context.Background(), m)
	noToken(t, res, err)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	got := fake.Messages()[0]
	var sm struct{ Text string }
	if err := json.Unmarshal(m.Body, &sm); err != nil {
		t.Fatal(err)
	}
	if n := chat.UTF16Len(sm.Text); n > telegram.MaxText || n < telegram.MaxText-8 {
		t.Fatalf("rendered text is %d units, want just under %d", n, telegram.MaxText)
	}
	if !strings.Contains(got.Visible, "[cut to fit Telegram's 4096-character limit; the whole submission is stored]") ||
		!strings.HasSuffix(got.Visible, "received 2025-03-01T12:00:00Z\nOpen in the inbox") || strings.Contains(got.Visible, "after:") {
		t.Fatalf("cut message does not end with the note and the footer:\n...%s", got.Visible[len(got.Visible)-300:])
	}

	short, err := telegram.Render(chatID, submission(chat.Field{Name: "message", Value: "short"}))
	if err != nil || bytes.Contains(short, []byte("cut to fit")) {
		t.Fatalf("a short message was cut: %s %v", short, err)
	}
}

func TestErrorClasses(t *testing.T) {
	cases := []struct {
		name  string
		reply telegramfake.Reply
		class providers.Class
		code  string
		retry time.Duration
	}{
		{"chat not found", telegramfake.ChatNotFound(), providers.Permanent, "chat_not_found", 0},
		{"blocked by the user", telegramfake.BotBlocked(), providers.Permanent, "bot_blocked", 0},
		{"kicked", telegramfake.BotKicked(), providers.Permanent, "bot_kicked", 0},
		{"moved to a supergroup", telegramfake.Migrated(-1009876), providers.Permanent, "chat_migrated", 0},
		{"too many requests", telegramfake.TooManyRequests(7), providers.Temporary, "too_many_requests", 7 * time.Second},
		{"internal error", telegramfake.InternalError(), providers.Temporary, "", 0},
		{"bad gateway", telegramfake.BadGateway(), providers.Temporary, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := telegramfake.New(token)
			defer fake.Close()
			fake.Enqueue(tc.reply)
			res, err := newProvider(t, fake, 0).Send(context.Background(), message(t, submission()))
			noToken(t, res, err)
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *providers.Error", err)
			}
			if pe.Class != tc.class || pe.Code != tc.code || pe.RetryAfter != tc.retry || pe.HTTPStatus != tc.reply.Status || pe.Failover {
				t.Fatalf("got %v code %q retry-after %v status %d failover %v; want %v %q %v %d no failover (%v)",
					pe.Class, pe.Code, pe.RetryAfter, pe.HTTPStatus, pe.Failover, tc.class, tc.code, tc.retry, tc.reply.Status, err)
			}
			// A chat that is gone or has removed the bot parks the chat; a throttle or an
			// outage does not.
			if want := tc.class == providers.Permanent; pe.Destination != want {
				t.Errorf("destination %v, want %v", pe.Destination, want)
			}
			if !strings.Contains(err.Error(), tc.reply.Description) && tc.code != "chat_migrated" {
				t.Fatalf("error %q does not say what Telegram said", err)
			}
			if len(fake.Messages()) != 0 || fake.Count() != 1 {
				t.Fatalf("fake: %d requests, %d messages; want 1 refused request", fake.Count(), len(fake.Messages()))
			}
		})
	}
}

func TestWrongTokenIsPermanentAndNotShown(t *testing.T) {
	fake := telegramfake.New("999:another-token")
	defer fake.Close()
	res, err := newProvider(t, fake, 0).Send(context.Background(), message(t, submission()))
	noToken(t, res, err)
	if pe := providers.Classify(err); pe.Class != providers.Permanent || pe.Code != "unauthorized" || pe.HTTPStatus != 401 {
		t.Fatalf("err %v, want permanent unauthorized (HTTP 401)", err)
	}
}

func TestNoAnswer(t *testing.T) {
	fake := telegramfake.New(token)
	defer fake.Close()
	fake.Enqueue(telegramfake.Reply{Hang: true}, telegramfake.Reply{Drop: true})
	m := message(t, submission())
	for _, what := range []string{"hang", "drop"} {
		res, err := newProvider(t, fake, 300*time.Millisecond).Send(context.Background(), m)
		noToken(t, res, err)
		if pe := providers.Classify(err); pe.Class != providers.Ambiguous {
			t.Fatalf("%s: %v, want ambiguous (the message may have been posted)", what, err)
		}
	}
	fake.Refuse()
	res, err := newProvider(t, fake, 0).Send(context.Background(), m)
	noToken(t, res, err)
	if pe := providers.Classify(err); pe.Class != providers.Temporary || pe.Code != "network" {
		t.Fatalf("refused: %v, want temporary network", err)
	}
	if err := fake.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, err := newProvider(t, fake, 0).Send(context.Background(), m); err != nil || len(fake.Messages()) != 1 {
		t.Fatalf("after resume: %v, %d messages", err, len(fake.Messages()))
	}
}

func TestNoBotForTheChat(t *testing.T) {
	fake := telegramfake.New(token)
	defer fake.Close()
	m := message(t, submission())
	m.To = "-100999"
	_, err := newProvider(t, fake, 0).Send(context.Background(), m)
	if pe := providers.Classify(err); pe.Class != providers.Permanent || pe.Code != "no_bot" || fake.Count() != 0 {
		t.Fatalf("err %v, %d requests; want permanent no_bot and nothing sent", err, fake.Count())
	}
}
