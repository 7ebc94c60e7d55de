package discord_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
	"github.com/formoutbox/caddy-form-outbox/providers/discord"
	"github.com/formoutbox/caddy-form-outbox/providers/discordfake"
)

func submission(fields ...chat.Field) chat.Submission {
	return chat.Submission{Form: "contact", ID: "0190d0c4-7a1b-7c3e-9f00-000000000001",
		Received: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Fields: fields,
		Link: "https://example.com/inbox/0190d0c4?a=1&b=2"}
}

func send(t *testing.T, fake *discordfake.Server, s chat.Submission, timeout time.Duration) (providers.Message, providers.Result, error) {
	t.Helper()
	body, err := discord.Render(s)
	if err != nil {
		t.Fatal(err)
	}
	m := providers.Message{ID: "0190d0c4-7a1b-7c3e-9f00-0000000000d1", Channel: "discord", URL: fake.URL(), Body: body}
	res, err := discord.New(discord.Config{Timeout: timeout}).Send(context.Background(), m)
	// The webhook URL holds the webhook token: nothing a send returns may show it.
	if err != nil && strings.Contains(err.Error(), "the-webhook-token-secret") {
		t.Fatalf("the webhook token leaked: %v", err)
	}
	return m, res, err
}

func TestSendsTheRenderedMessageAndRecordsItsID(t *testing.T) {
	fake := discordfake.New()
	defer fake.Close()
	s := submission(chat.Field{Name: "name", Value: "Zoë"}, chat.Field{Name: "message", Value: "Hello\nthere"})
	m, res, err := send(t, fake, s, 0)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	got := fake.Messages()
	if len(got) != 1 || !bytes.Equal(got[0].Body, m.Body) || got[0].Query != "wait=true" {
		t.Fatalf("the fake got %d messages (query %q); want one with the rendered bytes and wait=true", len(got), got[0].Query)
	}
	if res.Provider != "discord" || res.MessageID == "" || res.MessageID != got[0].ID {
		t.Fatalf("result %+v, want Discord's message id %s", res, got[0].ID)
	}
	// Each value is isolated (U+2068 ... U+2069, providers/chat/chat.go).
	want := "New submission to form contact\n\nname: \u2068Zoë\u2069\nmessage: \u2068Hello\nthere\u2069\n\n" +
		"Submission 0190d0c4-7a1b-7c3e-9f00-000000000001, received 2025-03-01T12:00:00Z\nOpen in the inbox"
	if got[0].Visible != want {
		t.Fatalf("visible text\n%q\nwant\n%q", got[0].Visible, want)
	}
	if len(got[0].Links) != 1 || got[0].Links[0] != "https://example.com/inbox/0190d0c4?a=1&b=2" || got[0].Flags&4 == 0 {
		t.Fatalf("links %q flags %d; want only the inbox link and previews suppressed", got[0].Links, got[0].Flags)
	}
}

func TestVisitorTextCannotPingOrFormat(t *testing.T) {
	fake := discordfake.New()
	defer fake.Close()
	hostile := []string{"@everyone", "@here now", "<@80351110224678912>", "<@&165511591545143296>",
		"[click](https://evil.example)", "<https://evil.example>", "**bold** _it_ ~~s~~ `code`", `\@everyone`, "> quote", "# heading"}
	var fields []chat.Field
	for _, v := range hostile {
		fields = append(fields, chat.Field{Name: "f**x**", Value: v})
	}
	s := submission(fields...)
	s.Link = ""
	if _, _, err := send(t, fake, s, 0); err != nil {
		t.Fatalf("send: %v", err)
	}
	g := fake.Messages()[0]
	if len(g.Pings) != 0 || len(g.Mentions) != 0 || len(g.Links) != 0 {
		t.Fatalf("visitor text made pings %q, mentions %q, links %q", g.Pings, g.Mentions, g.Links)
	}
	for _, v := range hostile {
		if !strings.Contains(g.Visible, "f**x**: \u2068"+v+"\u2069\n") {
			t.Errorf("the reader does not see %q as written:\n%s", v, g.Visible)
		}
	}
	if len(g.Bold) != 1+len(hostile) {
		t.Errorf("bold texts %q, want the title and the field names only", g.Bold)
	}
}

// TestMentionsNeverPing checks allowed_mentions on its own: a content with live
// mentions (as an operator template might write) still notifies nobody.
func TestMentionsNeverPing(t *testing.T) {
	fake := discordfake.New()
	defer fake.Close()
	body, err := discord.Render(submission())
	if err != nil {
		t.Fatal(err)
	}
	body = bytes.Replace(body, []byte(`"content":"`), []byte(`"content":"@everyone <@&1> <@2> `), 1)
	_, err = discord.New(discord.Config{}).Send(context.Background(), providers.Message{ID: "d", URL: fake.URL(), Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if g := fake.Messages()[0]; len(g.Mentions) != 3 || len(g.Pings) != 0 {
		t.Fatalf("mentions %q pings %q; want three mentions and no ping", g.Mentions, g.Pings)
	}
}

func TestLongMessageIsCutWithANote(t *testing.T) {
	fake := discordfake.New()
	defer fake.Close()
	m, _, err := send(t, fake, submission(chat.Field{Name: "message", Value: strings.Repeat("a@😀", 2000)}, chat.Field{Name: "after", Value: "x"}), 0)
	if err != nil {
		t.Fatalf("send: %v (the fake refuses content over 2000 characters)", err)
	}
	g := fake.Messages()[0]
	if n := chat.UTF16Len(g.Content); n > discord.MaxContent || n < discord.MaxContent-8 {
		t.Fatalf("content is %d characters, want just under %d", n, discord.MaxContent)
	}
	if !strings.Contains(g.Visible, "[cut to fit Discord's 2000-character limit; the whole submission is stored]") ||
		!strings.HasSuffix(g.Visible, "Open in the inbox") || strings.Contains(g.Visible, "after") {
		t.Fatalf("cut message does not end with the note and the footer: ...%s", g.Visible[len(g.Visible)-200:])
	}
	if !bytes.Contains(m.Body, []byte(`"allowed_mentions":{"parse":[]}`)) {
		t.Fatalf("body lacks allowed_mentions: %s", m.Body[:100])
	}
}

func TestErrorClasses(t *testing.T) {
	cases := []struct {
		name  string
		reply discordfake.Reply
		class providers.Class
		code  string
		retry time.Duration
	}{
		{"unknown webhook", discordfake.UnknownWebhook(), providers.Permanent, "unknown_webhook", 0},
		{"invalid token", discordfake.InvalidToken(), providers.Permanent, "invalid_webhook_token", 0},
		{"invalid form body", discordfake.InvalidFormBody(), providers.Permanent, "invalid_form_body", 0},
		{"rate limited", discordfake.RateLimited(2.5), providers.Temporary, "", 2500 * time.Millisecond},
		{"server error", discordfake.ServerError(), providers.Temporary, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := discordfake.New()
			defer fake.Close()
			fake.Enqueue(tc.reply)
			_, _, err := send(t, fake, submission(), 0)
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *providers.Error", err)
			}
			if pe.Class != tc.class || pe.Code != tc.code || pe.RetryAfter != tc.retry || pe.HTTPStatus != tc.reply.Status || pe.Failover {
				t.Fatalf("got %v code %q retry-after %v status %d failover %v; want %v %q %v %d (%v)",
					pe.Class, pe.Code, pe.RetryAfter, pe.HTTPStatus, pe.Failover, tc.class, tc.code, tc.retry, tc.reply.Status, err)
			}
			if !strings.Contains(err.Error(), tc.reply.Message) || len(fake.Messages()) != 0 {
				t.Fatalf("error %q does not say what Discord said, or the message was recorded", err)
			}
		})
	}
}

func TestNoAnswer(t *testing.T) {
	fake := discordfake.New()
	defer fake.Close()
	fake.Enqueue(discordfake.Reply{Hang: true}, discordfake.Reply{Drop: true})
	for _, what := range []string{"hang", "drop"} {
		if _, _, err := send(t, fake, submission(), 300*time.Millisecond); providers.Classify(err).Class != providers.Ambiguous {
			t.Fatalf("%s: %v, want ambiguous (the message may have been posted)", what, err)
		}
	}
	fake.Refuse()
	if _, _, err := send(t, fake, submission(), 0); providers.Classify(err).Class != providers.Temporary {
		t.Fatalf("refused: %v, want temporary", err)
	}
}
