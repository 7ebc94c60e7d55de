package slack_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
	"github.com/formoutbox/caddy-form-outbox/providers/slack"
	"github.com/formoutbox/caddy-form-outbox/providers/slackfake"
)

func submission(fields ...chat.Field) chat.Submission {
	return chat.Submission{Form: "contact", ID: "0190d0c4-7a1b-7c3e-9f00-000000000001",
		Received: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Fields: fields,
		Link: "https://example.com/inbox/0190d0c4?a=1&b=2"}
}

func send(t *testing.T, fake *slackfake.Server, s chat.Submission, timeout time.Duration) (providers.Message, error) {
	t.Helper()
	body, err := slack.Render(s)
	if err != nil {
		t.Fatal(err)
	}
	m := providers.Message{ID: "0190d0c4-7a1b-7c3e-9f00-0000000000d1", Channel: "slack", URL: fake.URL(), Body: body}
	_, err = slack.New(slack.Config{Timeout: timeout}).Send(context.Background(), m)
	// The webhook URL is the credential: nothing a send returns may show it.
	if err != nil && strings.Contains(err.Error(), "XXXXXXXX") {
		t.Fatalf("the webhook URL leaked: %v", err)
	}
	return m, err
}

func TestSendsTheRenderedMessage(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	s := submission(chat.Field{Name: "name", Value: "Zoë"}, chat.Field{Name: "message", Value: "Hello\nthere"})
	m, err := send(t, fake, s, 0)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if _, err := send(t, fake, s, 0); err != nil {
		t.Fatalf("second send: %v", err)
	}
	got := fake.Messages()
	if len(got) != 2 || !bytes.Equal(got[0].Body, m.Body) || !bytes.Equal(got[1].Body, got[0].Body) {
		t.Fatalf("the fake got %d messages; want two with the rendered bytes", len(got))
	}
	g := got[0]
	if g.Text != "New submission to form contact" || g.Unfurl {
		t.Fatalf("text %q unfurl %v; want the title and no unfurling", g.Text, g.Unfurl)
	}
	if want := "*New submission to form contact*\n\n*name*: \u2068Zoë\u2069\n*message*: \u2068Hello\nthere\u2069"; len(g.Sections) != 1 || g.Sections[0] != want {
		t.Fatalf("sections %q, want [%q]", g.Sections, want)
	}
	wantCtx := "Submission 0190d0c4-7a1b-7c3e-9f00-000000000001, received 2025-03-01T12:00:00Z · <https://example.com/inbox/0190d0c4?a=1&amp;b=2|Open in the inbox>"
	if len(g.Contexts) != 1 || g.Contexts[0] != wantCtx {
		t.Fatalf("context %q, want [%q]", g.Contexts, wantCtx)
	}
}

func TestVisitorTextCannotMentionOrLink(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	hostile := []string{"<!channel>", "<!here|here>", "<@U024BE7LH>", "<https://evil.example|click>", "&lt;!everyone&gt;", "@everyone & co"}
	var fields []chat.Field
	for _, v := range hostile {
		fields = append(fields, chat.Field{Name: "<!channel>", Value: v})
	}
	s := submission(fields...)
	s.Form = "<!here>"
	s.Link = ""
	if _, err := send(t, fake, s, 0); err != nil {
		t.Fatalf("send: %v", err)
	}
	g := fake.Messages()[0]
	if len(g.Specials) != 0 {
		t.Fatalf("visitor text reached Slack as mentions or links: %q", g.Specials)
	}
	shown := slackfake.Unescape(g.Sections[0])
	for _, v := range hostile {
		if !strings.Contains(shown, "*<!channel>*: \u2068"+v+"\u2069") {
			t.Errorf("the reader does not see %q as written:\n%s", v, shown)
		}
	}
}

func TestLongMessageIsCutWithANote(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	m, err := send(t, fake, submission(chat.Field{Name: "message", Value: strings.Repeat("&<😀", 2000)}, chat.Field{Name: "after", Value: "x"}), 0)
	if err != nil {
		t.Fatalf("send: %v (the fake refuses a section over 3000 characters)", err)
	}
	sec := fake.Messages()[0].Sections[0]
	if n := chat.UTF16Len(sec); n > slack.MaxSectionText || n < slack.MaxSectionText-8 {
		t.Fatalf("section is %d characters, want just under %d", n, slack.MaxSectionText)
	}
	if !strings.HasSuffix(sec, "_[cut to fit Slack's 3000-character limit; the whole submission is stored]_") || strings.Contains(sec, "after") {
		t.Fatalf("cut section does not end with the note: ...%s", sec[len(sec)-200:])
	}
	if !bytes.Contains(m.Body, []byte("Submission 0190d0c4")) {
		t.Fatal("the footer was lost")
	}
}

func TestErrorClasses(t *testing.T) {
	cases := []struct {
		name  string
		reply slackfake.Reply
		class providers.Class
		retry time.Duration
	}{
		{"invalid payload", slackfake.InvalidPayload(), providers.Permanent, 0},
		{"action prohibited", slackfake.ActionProhibited(), providers.Permanent, 0},
		{"no service", slackfake.NoService(), providers.Permanent, 0},
		{"channel not found", slackfake.ChannelNotFound(), providers.Permanent, 0},
		{"channel is archived", slackfake.ChannelIsArchived(), providers.Permanent, 0},
		{"rate limited", slackfake.RateLimited("9"), providers.Temporary, 9 * time.Second},
		{"server error", slackfake.ServerError(), providers.Temporary, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := slackfake.New()
			defer fake.Close()
			fake.Enqueue(tc.reply)
			_, err := send(t, fake, submission(), 0)
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *providers.Error", err)
			}
			if pe.Class != tc.class || pe.Code != tc.reply.Code || pe.RetryAfter != tc.retry || pe.HTTPStatus != tc.reply.Status || pe.Failover {
				t.Fatalf("got %v code %q retry-after %v status %d failover %v; want %v %q %v %d (%v)",
					pe.Class, pe.Code, pe.RetryAfter, pe.HTTPStatus, pe.Failover, tc.class, tc.reply.Code, tc.retry, tc.reply.Status, err)
			}
			if len(fake.Messages()) != 0 {
				t.Fatal("a refused message was recorded as posted")
			}
		})
	}
}

func TestNoAnswer(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	fake.Enqueue(slackfake.Reply{Hang: true}, slackfake.Reply{Drop: true})
	for _, what := range []string{"hang", "drop"} {
		if _, err := send(t, fake, submission(), 300*time.Millisecond); providers.Classify(err).Class != providers.Ambiguous {
			t.Fatalf("%s: %v, want ambiguous (the message may have been posted)", what, err)
		}
	}
	fake.Refuse()
	if _, err := send(t, fake, submission(), 0); providers.Classify(err).Class != providers.Temporary {
		t.Fatalf("refused: %v, want temporary", err)
	}
}
