package mimemsg_test

import (
	"bytes"
	"mime"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/mimemsg"
)

var from = &mail.Address{Name: "Example Forms", Address: "forms@example.com"}

func build(t *testing.T, m providers.Message) (raw []byte, msg *mail.Message) {
	t.Helper()
	if m.ID == "" {
		m.ID = "0190d0c4-7a1b-7c3e-9f00-00000000000a"
	}
	if m.To == "" {
		m.To = "sales@example.com"
	}
	if m.Text == "" {
		m.Text = "hello"
	}
	built, err := mimemsg.Build(from, m, time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	msg, err = mail.ReadMessage(bytes.NewReader(built.Raw))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, built.Raw)
	}
	return built.Raw, msg
}

// CheckHeaderLines fails t unless every line of raw's header ends in CRLF, is at most 78
// octets (RFC 5322's SHOULD; its hard limit is 998, SMTP's 1,000) and, when it continues
// the previous field, starts with a space.
func checkHeaderLines(t *testing.T, raw []byte) {
	t.Helper()
	head, _, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("no blank line after the header:\n%s", raw)
	}
	for i, line := range strings.Split(string(head), "\r\n") {
		if strings.ContainsAny(line, "\r\n") {
			t.Errorf("header line %d has a bare CR or LF: %q", i+1, line)
		}
		if len(line) > 78 {
			t.Errorf("header line %d is %d octets, want at most 78: %q", i+1, len(line), line)
		}
		if i > 0 && !strings.Contains(line, ":") && !strings.HasPrefix(line, " ") {
			t.Errorf("header line %d is neither a field nor a folded continuation: %q", i+1, line)
		}
	}
}

func decodedSubject(t *testing.T, msg *mail.Message) string {
	t.Helper()
	s, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		t.Fatalf("decode Subject %q: %v", msg.Header.Get("Subject"), err)
	}
	return s
}

func TestLongSubjectsAreFoldedAndDecodeToTheInput(t *testing.T) {
	for name, subject := range map[string]string{
		// intake/render.go: the template "New enquiry from {field.name}" with a 120-emoji name.
		"template with an emoji name": "New enquiry from " + strings.Repeat("😀", 120),
		// A `_subject` at intake's 200-character cap, mixed scripts.
		"long _subject":   strings.Repeat("Grüße 😀 Привет ", 12) + "終わり",
		"long ASCII":      strings.TrimSpace(strings.Repeat("Please call me back about the quote ", 6)),
		"ASCII no gaps":   strings.Repeat("x", 200),
		"long first word": strings.Repeat("y", 70) + " then words enough to need a fold",
	} {
		t.Run(name, func(t *testing.T) {
			const name = "Zoë Visitor, whose name is long enough to need folding as well"
			raw, msg := build(t, providers.Message{Subject: subject, ReplyTo: `"` + name + `" <zoe@visitor.example>`})
			checkHeaderLines(t, raw)
			if rt, err := msg.Header.AddressList("Reply-To"); err != nil || len(rt) != 1 || rt[0].Name != name {
				t.Errorf("Reply-To = %v (%v), want the name %q", rt, err, name)
			}
			if !bytes.Contains(raw, []byte("\r\n ")) {
				t.Errorf("the long Subject was not folded with CRLF and a space:\n%s", raw)
			}
			if got := decodedSubject(t, msg); got != subject {
				t.Errorf("Subject decodes to\n%q\nwant\n%q", got, subject)
			}
		})
	}
}

func TestSubjectThatLooksEncodedStaysLiteral(t *testing.T) {
	// "=?utf-8?b?DQpCY2M6IGV2aWxAeC50ZXN0?=" is an encoded word for CRLF "Bcc: evil@x.test".
	for _, subject := range []string{
		"=?utf-8?b?DQpCY2M6IGV2aWxAeC50ZXN0?=",
		"Hello =?utf-8?q?=0D=0ABcc:_evil@x.test?= there",
		"Grüße =?UTF-8?B?DQo=?=",
	} {
		raw, msg := build(t, providers.Message{Subject: subject})
		checkHeaderLines(t, raw)
		got := decodedSubject(t, msg)
		if got != subject || strings.ContainsAny(got, "\r\n") {
			t.Errorf("Subject %q reaches the reader as %q", subject, got)
		}
	}
}

func TestBidiControlsAreStripped(t *testing.T) {
	raw, msg := build(t, providers.Message{
		Subject: "Invoice \u202egpj.exe\u202c and \u2066isolated\u2069 \u202a\u202b\u202d\u2067\u2068!",
		ReplyTo: "\u202eZoë\u202c <zoe@visitor.example>",
	})
	for _, r := range "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069" {
		if bytes.ContainsRune(raw, r) {
			t.Errorf("the raw message carries %U", r)
		}
	}
	if got, want := decodedSubject(t, msg), "Invoice gpj.exe and isolated !"; got != want {
		t.Errorf("Subject = %q, want %q", got, want)
	}
	rt, err := msg.Header.AddressList("Reply-To")
	if err != nil || len(rt) != 1 || rt[0].Name != "Zoë" || rt[0].Address != "zoe@visitor.example" {
		t.Errorf("Reply-To = %v (%v), want Zoë <zoe@visitor.example>", rt, err)
	}
}

func TestReplyToNonASCIIAddresses(t *testing.T) {
	raw, msg := build(t, providers.Message{ReplyTo: "bob@bücher.test"})
	if rt, err := msg.Header.AddressList("Reply-To"); err != nil || len(rt) != 1 || rt[0].Address != "bob@xn--bcher-kva.test" {
		t.Errorf("Reply-To for bob@bücher.test = %v (%v), want the IDNA domain bob@xn--bcher-kva.test", rt, err)
	}
	for i, c := range bytes.SplitN(raw, []byte("\r\n\r\n"), 2)[0] {
		if c >= 0x80 {
			t.Fatalf("header byte %d is not ASCII:\n%s", i, raw)
		}
	}

	// A non-ASCII local part needs SMTPUTF8, which no provider path negotiates: the
	// address stays out of the header (intake keeps it in the body).
	_, msg = build(t, providers.Message{ReplyTo: "böb@x.test"})
	if got, ok := msg.Header["Reply-To"]; ok {
		t.Errorf("Reply-To for böb@x.test = %q, want no Reply-To header", got)
	}
}

func TestMessageFromReplacesTheConfiguredSender(t *testing.T) {
	m := providers.Message{ID: "0190d0c4-7a1b-7c3e-9f00-00000000000b", To: "ada@example.org", Text: "hi",
		From: "Example Ltd <hello@example.com>"}
	_, msg := build(t, m)
	if got := msg.Header.Get("From"); got != `"Example Ltd" <hello@example.com>` {
		t.Errorf("From = %q, want the message's sender", got)
	}
	if got := msg.Header.Get("Message-ID"); got != "<"+m.ID+"@example.com>" {
		t.Errorf("Message-ID = %q, want the message's sender's domain", got)
	}
	for _, bad := range []string{"Evil <a@example.com>\r\nBcc: victim@example.net", "not an address"} {
		m.From = bad
		if _, err := mimemsg.Build(from, m, time.Now()); err == nil {
			t.Errorf("From %q: built, want an error", bad)
		}
	}
}
