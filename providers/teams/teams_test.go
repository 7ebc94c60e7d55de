package teams_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
	"github.com/formoutbox/caddy-form-outbox/providers/teams"
	"github.com/formoutbox/caddy-form-outbox/providers/teamsfake"
)

func submission(fields ...chat.Field) chat.Submission {
	return chat.Submission{Form: "contact", ID: "0190d0c4-7a1b-7c3e-9f00-000000000001",
		Received: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Fields: fields,
		Link: "https://example.com/inbox/0190d0c4?a=1&b=2"}
}

func post(t *testing.T, fake *teamsfake.Server, s chat.Submission, timeout time.Duration) (providers.Message, error) {
	t.Helper()
	body, err := teams.Render(s)
	if err != nil {
		t.Fatal(err)
	}
	m := providers.Message{ID: "0190d0c4-7a1b-7c3e-9f00-0000000000d1", Channel: "teams", URL: fake.URL(), Body: body}
	_, err = teams.New(teams.Config{Timeout: timeout}).Send(context.Background(), m)
	// The sig parameter is the credential: nothing a send returns may show it.
	if err != nil && strings.Contains(err.Error(), teamsfake.Sig) {
		t.Fatalf("the webhook signature leaked: %v", err)
	}
	return m, err
}

func TestSendsTheRenderedCard(t *testing.T) {
	fake := teamsfake.New()
	defer fake.Close()
	s := submission(chat.Field{Name: "name", Value: "Zoë"}, chat.Field{Name: "message", Value: "Hello\nthere"})
	m, err := post(t, fake, s, 0)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	got := fake.Cards()
	if len(got) != 1 || !bytes.Equal(got[0].Body, m.Body) || len(got[0].Blocks) != 3 {
		t.Fatalf("the fake got %d cards; want one with the rendered bytes and three text blocks", len(got))
	}
	b := got[0].Blocks
	if b[0].Visible != "New submission to form contact" ||
		b[1].Visible != "name: \u2068Zoë\u2069\n\nmessage: \u2068Hello\n\nthere\u2069" ||
		b[2].Visible != "Submission 0190d0c4-7a1b-7c3e-9f00-000000000001, received 2025-03-01T12:00:00Z" {
		t.Fatalf("blocks as read: %q / %q / %q", b[0].Visible, b[1].Visible, b[2].Visible)
	}
	if len(got[0].Buttons) != 1 || got[0].Buttons[0] != "https://example.com/inbox/0190d0c4?a=1&b=2" {
		t.Fatalf("buttons %q, want the inbox link", got[0].Buttons)
	}
}

func TestVisitorTextCannotFormatOrLink(t *testing.T) {
	fake := teamsfake.New()
	defer fake.Close()
	hostile := []string{"[click](https://evil.example)", "<https://evil.example>", "**bold** _it_ `code`", "- item", "1. one", "# heading", `\*`, "&lt;b&gt;", "<at>Everyone</at>"}
	var fields []chat.Field
	for _, v := range hostile {
		fields = append(fields, chat.Field{Name: "f**x**", Value: v})
	}
	if _, err := post(t, fake, submission(fields...), 0); err != nil {
		t.Fatalf("send: %v", err)
	}
	blk := fake.Cards()[0].Blocks[1]
	if len(blk.Links) != 0 || len(blk.Bold) != len(hostile) {
		t.Fatalf("visitor text made links %q or bold %q", blk.Links, blk.Bold)
	}
	for _, v := range hostile {
		if !strings.Contains(blk.Visible, "f**x**: \u2068"+v+"\u2069") {
			t.Errorf("the reader does not see %q as written:\n%s", v, blk.Visible)
		}
	}
}

func TestLongCardIsCutWithANote(t *testing.T) {
	fake := teamsfake.New()
	defer fake.Close()
	// '<' takes six bytes in JSON and two more with its escape: the limit counts bytes
	// of the encoded card, which is what Teams refuses.
	m, err := post(t, fake, submission(chat.Field{Name: "message", Value: strings.Repeat("<€😀", 5000)}, chat.Field{Name: "after", Value: "x"}), 0)
	if err != nil {
		t.Fatalf("send: %v (the fake refuses a message over 28 KB)", err)
	}
	if len(m.Body) > teamsfake.MaxBody || len(m.Body) < teams.MaxText {
		t.Fatalf("body is %d bytes, want between %d and %d", len(m.Body), teams.MaxText, teamsfake.MaxBody)
	}
	blk := fake.Cards()[0].Blocks[1]
	if !strings.HasSuffix(blk.Visible, "[cut to fit a Teams message; the whole submission is stored]") || strings.Contains(blk.Visible, "after") {
		t.Fatalf("cut text does not end with the note: ...%s", blk.Visible[len(blk.Visible)-200:])
	}
}

func TestErrorClasses(t *testing.T) {
	cases := []struct {
		name  string
		reply teamsfake.Reply
		class providers.Class
		retry time.Duration
	}{
		{"bad request", teamsfake.BadRequest(), providers.Permanent, 0},
		{"unauthorized", teamsfake.Unauthorized(), providers.Permanent, 0},
		{"workflow not found", teamsfake.WorkflowNotFound(), providers.Permanent, 0},
		{"throttled", teamsfake.TooManyRequests("11"), providers.Temporary, 11 * time.Second},
		{"unavailable", teamsfake.ServiceUnavailable(), providers.Temporary, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := teamsfake.New()
			defer fake.Close()
			fake.Enqueue(tc.reply)
			_, err := post(t, fake, submission(), 0)
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *providers.Error", err)
			}
			if pe.Class != tc.class || pe.Code != tc.reply.Code || pe.RetryAfter != tc.retry || pe.HTTPStatus != tc.reply.Status || pe.Failover {
				t.Fatalf("got %v code %q retry-after %v status %d failover %v; want %v %q %v %d (%v)",
					pe.Class, pe.Code, pe.RetryAfter, pe.HTTPStatus, pe.Failover, tc.class, tc.reply.Code, tc.retry, tc.reply.Status, err)
			}
			if !strings.Contains(err.Error(), tc.reply.Message) || len(fake.Cards()) != 0 {
				t.Fatalf("error %q does not say what Teams said, or the card was recorded", err)
			}
		})
	}
}

func TestNoAnswer(t *testing.T) {
	fake := teamsfake.New()
	defer fake.Close()
	fake.Enqueue(teamsfake.Reply{Hang: true}, teamsfake.Reply{Drop: true})
	for _, what := range []string{"hang", "drop"} {
		if _, err := post(t, fake, submission(), 300*time.Millisecond); providers.Classify(err).Class != providers.Ambiguous {
			t.Fatalf("%s: %v, want ambiguous (the card may have been posted)", what, err)
		}
	}
	fake.Refuse()
	if _, err := post(t, fake, submission(), 0); providers.Classify(err).Class != providers.Temporary {
		t.Fatalf("refused: %v, want temporary", err)
	}
}
