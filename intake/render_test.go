package intake

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func emailPayloads(t *testing.T, res *Result) []outbox.Payload {
	t.Helper()
	var out []outbox.Payload
	for _, d := range res.Deliveries {
		if d.Channel == outbox.ChannelEmail {
			out = append(out, payloadOf(t, d))
		}
	}
	return out
}

func TestEmailPayload(t *testing.T) {
	c := contactConfig(t)
	res := mustParse(t, c, postForm(form("name", "Ada Lovelace", "email", "ada@example.com", "message", "Hello\r\nthere", "_replyto", "reply@example.com")))
	ps := emailPayloads(t, res)
	if len(ps) != 2 || ps[0].To != "sales@example.com" || ps[1].To != "ops@example.com" {
		t.Fatalf("email payloads = %+v", ps)
	}
	p := ps[0]
	if p.ReplyTo != "reply@example.com" {
		t.Errorf("ReplyTo = %q, want the _replyto address", p.ReplyTo)
	}
	if p.Subject != "New enquiry from Ada Lovelace" {
		t.Errorf("Subject = %q", p.Subject)
	}
	id := res.Submission.ID
	wantText := fmt.Sprintf("New submission to form contact\n\n"+
		"name: Ada Lovelace\nemail: ada@example.com\nmessage: Hello\n  there\n\n"+
		"Submission: %s\nReceived: 2025-03-01T12:30:00Z\n", id)
	if p.Text != wantText {
		t.Errorf("Text =\n%s\nwant\n%s", p.Text, wantText)
	}
	for _, s := range []string{"<th align=\"left\" valign=\"top\"><bdi>message</bdi></th>", "Hello\nthere", id.String()} {
		if !strings.Contains(p.HTML, s) {
			t.Errorf("HTML lacks %q:\n%s", s, p.HTML)
		}
	}
	if p.URL != "" || p.Body != nil {
		t.Errorf("email payload carries webhook parts: %+v", p)
	}
	// Every recipient of a route gets the same message, addressed to itself.
	second := ps[1]
	second.To = p.To
	if !reflect.DeepEqual(second, p) {
		t.Errorf("the second recipient's payload differs beyond To:\n%+v\nwant\n%+v", ps[1], p)
	}
}

func TestReplyToOnlyFromAValidAddress(t *testing.T) {
	tests := []struct {
		name  string
		pairs []string
		want  string
	}{
		{"_replyto wins", []string{"email", "ada@example.com", "_replyto", "r@example.com"}, "r@example.com"},
		{"email field when no _replyto", []string{"email", "ada@example.com"}, "ada@example.com"},
		{"invalid _replyto falls back to email", []string{"_replyto", "not-an-address", "email", "ada@example.com"}, "ada@example.com"},
		{"header injection refused", []string{"email", "ada@example.com\nBcc: all@example.com"}, ""},
		{"display name refused", []string{"email", "Ada <ada@example.com>"}, ""},
		{"no address at all", []string{"name", "Ada"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := contactConfig(t)
			for _, p := range emailPayloads(t, mustParse(t, c, postForm(form(tt.pairs...)))) {
				if p.ReplyTo != tt.want {
					t.Errorf("ReplyTo = %q, want %q", p.ReplyTo, tt.want)
				}
			}
		})
	}
}

func TestHTMLEscapesVisitorText(t *testing.T) {
	c := contactConfig(t)
	res := mustParse(t, c, postForm(form("name", `<script>alert("x")</script>`, "<img src=x onerror=y>", "1", "email", "a@example.com", "message", "m")))
	p := emailPayloads(t, res)[0]
	if strings.Contains(p.HTML, "<script>") || strings.Contains(p.HTML, "<img") {
		t.Fatalf("visitor markup reached the HTML body:\n%s", p.HTML)
	}
	for _, s := range []string{"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "&lt;img src=x onerror=y&gt;"} {
		if !strings.Contains(p.HTML, s) {
			t.Errorf("HTML lacks the escaped %q:\n%s", s, p.HTML)
		}
	}
	if !strings.Contains(p.Text, `name: <script>alert("x")</script>`) {
		t.Errorf("the text part should carry the value verbatim:\n%s", p.Text)
	}
}

func TestSubject(t *testing.T) {
	tests := []struct {
		name     string
		template string
		pairs    []string
		want     string
	}{
		{"template", "Enquiry from {field.name} <{field.email}>", []string{"name", "Ada", "email", "a@example.com"}, "Enquiry from Ada <a@example.com>"},
		{"line breaks cannot inject headers", "From {field.name}", []string{"name", "Ada\r\nBcc: x@example.com"}, "From Ada Bcc: x@example.com"},
		{"dotted and non-ASCII names", "{field.a.b} {field.prénom}", []string{"a.b", "x", "prénom", "Zoé"}, "x Zoé"},
		{"missing field renders empty", "Hi {field.nobody}!", []string{"name", "Ada"}, "Hi !"},
		{"default names the form", "", []string{"name", "Ada"}, "New submission to form contact"},
		{"visitor _subject when no template", "", []string{"_subject", "Quote\nrequest"}, "Quote request"},
		{"template wins over _subject", "Fixed", []string{"_subject", "Mine"}, "Fixed"},
		{"bounded", "{field.name}", []string{"name", strings.Repeat("s", 300)}, strings.Repeat("s", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := contactConfig(t)
			c.Routes[0].Subject = tt.template
			p := emailPayloads(t, mustParse(t, c, postForm(form(tt.pairs...))))[0]
			if p.Subject != tt.want {
				t.Errorf("Subject = %q, want %q", p.Subject, tt.want)
			}
		})
	}
}

func TestWebhookPayload(t *testing.T) {
	c := contactConfig(t)
	res := mustParse(t, c, postForm(form("name", "Ada", "zip", "12345", "email", "a@example.com", "message", "Hi")))
	d := res.Deliveries[2]
	if d.Channel != outbox.ChannelWebhook || d.Recipient != "https://crm.example.com/hooks/forms" || d.Route != "webhook" {
		t.Fatalf("delivery = %s %s %s", d.Channel, d.Recipient, d.Route)
	}
	want := fmt.Sprintf(`{"url":"https://crm.example.com/hooks/forms","body":{"id":"%s","form":"contact","status":"accepted",`+
		`"created_at":"2025-03-01T12:30:00Z","data":{"name":"Ada","zip":"12345","email":"a@example.com","message":"Hi"}}}`, res.Submission.ID)
	if string(d.Payload) != want {
		t.Errorf("payload =\n%s\nwant\n%s", d.Payload, want)
	}
	if strings.Contains(string(d.Payload), "whsec_") {
		t.Error("the webhook secret leaked into the stored payload")
	}
}

func TestWebhookPayloadWithoutFields(t *testing.T) {
	c := contactConfig(t)
	res := mustParse(t, c, postJSON(`{}`))
	if !strings.Contains(string(res.Deliveries[2].Payload), `"status":"quarantined","created_at":"2025-03-01T12:30:00Z","data":{}}`) {
		t.Errorf("payload = %s", res.Deliveries[2].Payload)
	}
}

// TestReplyAddressLeftOutOfReplyToStaysInBody: an address with a non-ASCII local part
// cannot go in Reply-To (providers/headers.go), so the body must carry it, or the reader
// could not answer the lead.
func TestReplyAddressLeftOutOfReplyToStaysInBody(t *testing.T) {
	c := contactConfig(t)
	p := emailPayloads(t, mustParse(t, c, postForm(form("name", "Böb", "message", "hi", "_replyto", "böb@x.test"))))[0]
	if p.ReplyTo != "böb@x.test" {
		t.Errorf("ReplyTo = %q, want the address kept in the payload", p.ReplyTo)
	}
	if !strings.Contains(p.Text, "\nReply to: böb@x.test\n") {
		t.Errorf("the text part lacks the reply address:\n%s", p.Text)
	}
	if !strings.Contains(p.HTML, `Reply to: <a href="mailto:b%c3%b6b@x.test">böb@x.test</a>`) {
		t.Errorf("the HTML part lacks the reply address:\n%s", p.HTML)
	}

	// Already in the body as a field, or fit for Reply-To: no extra line.
	for _, pairs := range [][]string{
		{"email", "böb@x.test", "message", "hi"},
		{"message", "hi", "_replyto", "bob@bücher.test"},
		{"message", "hi", "_replyto", "bob@example.com"},
	} {
		p := emailPayloads(t, mustParse(t, c, postForm(form(pairs...))))[0]
		if strings.Contains(p.Text, "Reply to:") || strings.Contains(p.HTML, "Reply to:") {
			t.Errorf("%q: the body repeats the reply address:\n%s", pairs, p.Text)
		}
	}
}
