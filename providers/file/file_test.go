package file_test

import (
	"context"
	"errors"
	"mime"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/file"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/mimemsg"
)

func newProvider(t *testing.T, dir string) *file.Provider {
	t.Helper()
	p, err := file.New(file.Config{
		Dir:  dir,
		From: "Example Forms <forms@example.com>",
		Now:  func() time.Time { return time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWritesParseableEML(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mail")
	p := newProvider(t, dir)
	m := providers.Message{
		ID:      "0190a5b0-0000-7000-8000-000000000001",
		Channel: "email",
		To:      "sales@example.com",
		ReplyTo: "Zoë Visitor <zoe@visitor.example>",
		Subject: "New enquiry from Zoë",
		Text:    "Name: Zoë\nMessage: a line that is long enough to need soft line breaks when encoded as quoted-printable, which wraps at 76 =\n",
		HTML:    "<p>Name: Zo&euml;</p>",
	}
	res, err := p.Send(context.Background(), m)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if res.Provider != "file" || res.MessageID != "<"+m.ID+"@example.com>" {
		t.Fatalf("result = %+v", res)
	}

	f, err := os.Open(filepath.Join(dir, m.ID+".eml"))
	if err != nil {
		t.Fatalf("the .eml file is not where it should be: %v", err)
	}
	defer f.Close()
	msg, err := mail.ReadMessage(f)
	if err != nil {
		t.Fatalf("parse .eml: %v", err)
	}
	h := msg.Header
	from, err := h.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Address != "forms@example.com" || from[0].Name != "Example Forms" {
		t.Errorf("From = %v (%v)", from, err)
	}
	to, err := h.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Address != "sales@example.com" {
		t.Errorf("To = %v (%v)", to, err)
	}
	rt, err := h.AddressList("Reply-To")
	if err != nil || len(rt) != 1 || rt[0].Address != "zoe@visitor.example" || rt[0].Name != "Zoë Visitor" {
		t.Errorf("Reply-To = %v (%v)", rt, err)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil || subject != m.Subject {
		t.Errorf("Subject = %q (%v), want %q", subject, err, m.Subject)
	}
	if d, err := h.Date(); err != nil || !d.Equal(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)) {
		t.Errorf("Date = %v (%v)", d, err)
	}
	if got := h.Get("Message-ID"); got != res.MessageID {
		t.Errorf("Message-ID = %q, want %q", got, res.MessageID)
	}
	text, html, err := mimemsg.ReadAlternative(msg)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.ReplaceAll(m.Text, "\n", "\r\n"); text != want || html != m.HTML {
		t.Errorf("parts text %q html %q, want %q and %q", text, html, want, m.HTML)
	}
}

func TestRetryOverwritesInsteadOfDuplicating(t *testing.T) {
	dir := t.TempDir()
	p := newProvider(t, dir)
	m := providers.Message{ID: "d1", Channel: "email", To: "a@example.com", Subject: "first", Text: "x"}
	if _, err := p.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	m.Subject = "second"
	if _, err := p.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "d1.eml" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("folder holds %q, want only d1.eml (no temp files, no duplicates)", names)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "d1.eml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "Subject: second\r\n") {
		t.Fatalf("the retry did not replace the file:\n%s", raw)
	}
}

func TestRejectsLineBreaksInHeaders(t *testing.T) {
	dir := t.TempDir()
	p := newProvider(t, dir)
	base := providers.Message{ID: "d2", Channel: "email", To: "a@example.com", Subject: "hi", Text: "x"}
	cases := map[string]func(m *providers.Message){
		"subject":  func(m *providers.Message) { m.Subject = "hi\r\nBcc: victim@example.com" },
		"reply-to": func(m *providers.Message) { m.ReplyTo = "a@example.com\nBcc: victim@example.com" },
		"to":       func(m *providers.Message) { m.To = "a@example.com\r\nX: y" },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			m := base
			mutate(&m)
			_, err := p.Send(context.Background(), m)
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.Class != providers.Permanent {
				t.Fatalf("err = %v, want a Permanent *providers.Error", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "d2.eml")); !os.IsNotExist(err) {
				t.Fatalf("a message with a header injection was written (stat err %v)", err)
			}
		})
	}
	if _, err := file.New(file.Config{Dir: dir, From: "forms@example.com\r\nBcc: x@example.com"}); err == nil {
		t.Fatal("New accepted a From with a line break")
	}
}
