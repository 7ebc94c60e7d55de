package intake

import (
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
)

// A visitor's U+202E (right-to-left override) at the end of their name must not reverse
// the operator's text after it. Chat messages carry every value between FSI and PDI with
// its own bidi controls removed; e-mail subjects and bodies carry it without them (an
// e-mail header keeps no bidi control at all, providers/headers.go). The webhook body is
// data for a program and keeps the value as sent.
func TestAVisitorsOverrideDoesNotReverseTheOperatorsText(t *testing.T) {
	const inbox = "https://admin.example.com/inbox"
	c := &Config{Form: "contact", InboxURL: inbox, IPHashKey: []byte("k"), Routes: []Route{
		chatTemplateRoute(outbox.ChannelTelegram, "telegram.html"),
		{Name: "builtin", Channel: outbox.ChannelTelegram, ChatID: "-100124", Token: "123:SECRET-TOKEN"},
		{Channel: outbox.ChannelEmail, To: []string{"sales@example.com"}, Subject: "New enquiry from {field.name} about {field.topic}"},
		{Channel: outbox.ChannelWebhook, URL: "https://crm.example.com/hooks/forms", Secret: "whsec_c2VjcmV0"},
	}}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, c, postForm(form("name", "Mallory\u202e", "topic", "sales", "message", "hi\u2069\u202ethere")))
	link := inbox + "/submissions/" + res.Submission.ID.String()
	byRoute := map[string]outbox.Delivery{}
	for _, d := range res.Deliveries {
		byRoute[string(d.Channel)+"/"+d.Recipient] = d
	}

	tmpl := chatTextOf(t, outbox.ChannelTelegram, payloadOf(t, byRoute["telegram/-100123"]).Body)
	want := "<b>Lead from \u2068Mallory\u2069</b> <i>sales</i>\n<pre>\u2068hithere\u2069</pre>\n<a href=\"" + link + "\">Open</a>\n"
	if tmpl != want {
		t.Errorf("telegram template text\n got %q\nwant %q", tmpl, want)
	}
	builtin := chatTextOf(t, outbox.ChannelTelegram, payloadOf(t, byRoute["telegram/-100124"]).Body)
	if !strings.Contains(builtin, "\n<b>name</b>: \u2068Mallory\u2069\n<b>topic</b>: \u2068sales\u2069\n<b>message</b>: \u2068hithere\u2069\n") ||
		strings.ContainsRune(builtin, '\u202e') {
		t.Errorf("telegram built-in text %q", builtin)
	}

	p := payloadOf(t, byRoute["email/sales@example.com"])
	if p.Subject != "New enquiry from Mallory about sales" {
		t.Errorf("planned subject %q", p.Subject)
	}
	m, perr := providers.PrepareHeaders(providers.Message{To: p.To, Subject: p.Subject})
	if perr != nil || m.Subject != "New enquiry from Mallory about sales" {
		t.Errorf("subject sent %q (%v)", m.Subject, perr)
	}
	if strings.ContainsAny(p.Text+p.HTML, "\u202e\u2069") || !strings.Contains(p.HTML, "<bdi>Mallory</bdi>") {
		t.Errorf("e-mail bodies keep a bidi control or do not isolate the value:\n%s\n%s", p.Text, p.HTML)
	}

	if hook := string(payloadOf(t, byRoute["webhook/https://crm.example.com/hooks/forms"]).Body); !strings.Contains(hook, `"name":"Mallory\u202e"`) &&
		!strings.Contains(hook, "\"name\":\"Mallory\u202e\"") {
		t.Errorf("webhook body %s: the value as sent is data", hook)
	}
	if v, _ := res.Submission.Data.Get("name"); v != "Mallory\u202e" {
		t.Errorf("stored name %q, want it as sent", v)
	}
}

// The visitor's reply address that only the body can carry (a non-ASCII local part,
// replyToInBody) is shown without its bidi controls too.
func TestReplyToInTheBodyHasNoBidiControl(t *testing.T) {
	c := contactConfig(t)
	res := mustParse(t, c, postForm(form("name", "Ada", "email", "ada@example.com", "message", "Hi", "_replyto", "böb\u202e@example.com")))
	p := payloadOf(t, res.Deliveries[0])
	if !strings.Contains(p.Text, "\nReply to: böb@example.com\n") || !strings.Contains(p.HTML, "böb@example.com") ||
		strings.ContainsRune(p.Text+p.HTML, '\u202e') {
		t.Fatalf("bodies:\n%s\n%s", p.Text, p.HTML)
	}
}
