package intake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// autoreplyConfig is contactConfig with an autoreply (templates in testdata/templates).
func autoreplyConfig(t testing.TB, edit ...func(*Config)) *Config {
	t.Helper()
	c := &Config{
		Form: "contact",
		Fields: []FieldSpec{
			{Name: "name", Required: true, MaxLength: 120},
			{Name: "email", Required: true, Email: true},
			{Name: "message", Required: true, MaxLength: 5000},
		},
		Routes: []Route{{Channel: outbox.ChannelEmail, To: []string{"sales@example.com"}}},
		Autoreply: &Autoreply{From: "Example Ltd <hello@example.com>", Subject: "We got your message, {field.name}",
			BodyText: "testdata/templates/autoreply.txt", BodyHTML: "testdata/templates/autoreply.html"},
		InboxURL:  "https://admin.example.com/inbox",
		IPHashKey: []byte("test-key"),
	}
	for _, e := range edit {
		e(c)
	}
	if err := c.Provision(); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return c
}

// autoreplies returns the autoreply deliveries among ds.
func autoreplies(ds []outbox.Delivery) []outbox.Delivery {
	var out []outbox.Delivery
	for _, d := range ds {
		if d.Channel == outbox.ChannelAutoreply {
			out = append(out, d)
		}
	}
	return out
}

func TestAutoreplyIsTheOperatorsMessageToTheVisitor(t *testing.T) {
	c := autoreplyConfig(t)
	res := mustParse(t, c, postForm(form("name", "Ada <b>Lovelace</b>", "email", "Ada@Example.com", "message", "Hello",
		"_subject", "Free money", "_replyto", "ada@example.com")))
	got := autoreplies(res.Deliveries)
	if len(got) != 1 {
		t.Fatalf("autoreplies = %+v, want one", got)
	}
	d := got[0]
	if d.Route != AutoreplyRoute || d.Recipient != "ada@example.com" || d.Status != outbox.DeliveryPending ||
		d.MaxAttempts != outbox.DefaultEmailAttempts {
		t.Fatalf("delivery = %+v", d)
	}
	p := payloadOf(t, d)
	id := res.Submission.ID.String()
	// The subject is the operator's (the visitor's _subject is for notifications), the
	// sender is the configured one, and nothing of the visitor reaches Reply-To; the inbox
	// link is never in it.
	if p.From != "Example Ltd <hello@example.com>" || p.To != "ada@example.com" || p.ReplyTo != "" ||
		p.Subject != "We got your message, Ada <b>Lovelace</b>" {
		t.Fatalf("headers = from %q to %q reply-to %q subject %q", p.From, p.To, p.ReplyTo, p.Subject)
	}
	wantText := "Dear Ada <b>Lovelace</b>,\n\nthank you for writing to contact. We answer within a day.\nYour reference: " + id + "\n"
	wantHTML := "<p>Dear Ada &lt;b&gt;Lovelace&lt;/b&gt;,</p>\n<p>thank you for writing to us.</p>\n"
	if p.Text != wantText || p.HTML != wantHTML {
		t.Fatalf("text %q\nwant %q\nhtml %q\nwant %q", p.Text, wantText, p.HTML, wantHTML)
	}
	if g := p.Autoreply; g == nil || g.Form != "contact" || g.Key != outbox.AutoreplyKey("ada@example.com") || g.WindowSeconds != 86400 {
		t.Fatalf("gate = %+v", p.Autoreply)
	}
	if strings.Contains(string(d.Payload), "admin.example.com") {
		t.Fatalf("the inbox link reached the visitor's reply: %s", d.Payload)
	}
}

func TestAutoreplyOnlyForAnAcceptedSubmissionWithAnAddress(t *testing.T) {
	c := autoreplyConfig(t, func(c *Config) {
		c.Fields[1].Required = false
		c.AllowedOrigins = []string{"https://example.com"}
	})
	for _, tc := range []struct {
		name   string
		body   string
		origin string
		want   outbox.DeliveryStatus // "": no autoreply planned
	}{
		{"accepted", form("name", "Ada", "email", "ada@example.com", "message", "Hi"), "", outbox.DeliveryPending},
		{"no address", form("name", "Ada", "message", "Hi"), "", ""},
		{"test submission", form("name", "Ada", "email", "ada@example.com", "message", "Hi", "_test", "1"), "", ""},
		// Held back: planned skipped, so a release can send it (the store applies the window then).
		{"honeypot", form("name", "Ada", "email", "ada@example.com", "message", "Hi", "_gotcha", "x"), "", outbox.DeliverySkipped},
		{"origin rejected", form("name", "Ada", "email", "ada@example.com", "message", "Hi"), "https://evil.example", outbox.DeliverySkipped},
		// The field spec refuses these (422, quarantined): nothing for a release to send
		// to an address that is not one.
		{"display name", form("name", "Ada", "email", `"Bank" <ada@example.com>`, "message", "Hi"), "", ""},
		{"two addresses", form("name", "Ada", "email", "ada@example.com, eve@example.net", "message", "Hi"), "", ""},
		// Valid, but no provider path can send to a non-ASCII local part (SMTPUTF8).
		{"non-ASCII local part", form("name", "Ada", "email", "zoë@example.com", "message", "Hi"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := postForm(tc.body)
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			res := mustParse(t, c, r)
			got := autoreplies(res.Deliveries)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Fatalf("status %s: autoreply planned to %q, want none", res.Submission.Status, got[0].Recipient)
			case tc.want != "" && (len(got) != 1 || got[0].Status != tc.want):
				t.Fatalf("status %s: autoreplies %+v, want one %s", res.Submission.Status, got, tc.want)
			}
		})
	}
}

func TestAutoreplyHeadersCannotBeInjected(t *testing.T) {
	c := autoreplyConfig(t)
	for _, email := range []string{
		"ada@example.com\r\nBcc: victim@example.net",
		"ada@example.com\nBcc: victim@example.net",
		"ada@example.com>\r\nBcc: <victim@example.net",
		"=?utf-8?b?dmljdGltQGV4YW1wbGUubmV0?=",
	} {
		res, err := c.Parse(postForm(form("name", "Ada", "email", email, "message", "Hi")), testNow)
		if err != nil {
			continue // refused outright (400): nothing stored, nothing sent
		}
		if got := autoreplies(res.Deliveries); len(got) != 0 {
			t.Errorf("email %q: autoreply planned to %q", email, got[0].Recipient)
		}
	}
	// A field the operator prints in the subject stays on one line.
	res := mustParse(t, c, postForm(form("name", "Ada\r\nBcc: victim@example.net", "email", "ada@example.com", "message", "Hi")))
	got := autoreplies(res.Deliveries)
	if len(got) != 1 {
		t.Fatalf("autoreplies = %+v", got)
	}
	if p := payloadOf(t, got[0]); strings.ContainsAny(p.Subject, "\r\n") || p.To != "ada@example.com" {
		t.Fatalf("subject %q to %q", p.Subject, p.To)
	}
}

func TestAutoreplyTemplateFailureSendsNoReply(t *testing.T) {
	c := autoreplyConfig(t, func(c *Config) {
		c.Fields = append(c.Fields, FieldSpec{Name: "topic"})
		c.Autoreply.BodyText, c.Autoreply.BodyHTML = "testdata/templates/failsonx.txt", ""
	})
	res := mustParse(t, c, postForm(form("name", "Ada", "email", "ada@example.com", "message", "Hi", "topic", "x")))
	if got := autoreplies(res.Deliveries); len(got) != 0 {
		t.Fatalf("autoreply planned after its template failed: %+v", got)
	}
	if len(res.Deliveries) != 1 {
		t.Fatalf("the notification was not planned: %+v", res.Deliveries)
	}
	var failed int
	for _, ev := range res.Submission.Events {
		if ev.Kind == outbox.EventTemplateFailed && strings.Contains(string(ev.Data), `"route":"autoreply"`) {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("template.failed events = %+v", res.Submission.Events)
	}
}

func TestAutoreplyProvisionErrors(t *testing.T) {
	ok := func() *Autoreply {
		return &Autoreply{From: "hello@example.com", Subject: "Thanks", BodyText: "testdata/templates/autoreply.txt"}
	}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Autoreply.From = "" }, "autoreply: from"},
		{func(c *Config) { c.Autoreply.From = "Evil <a@example.com>\r\nBcc: b@example.com" }, "autoreply: from"},
		{func(c *Config) { c.Autoreply.From = "a@example.com, b@example.com" }, "autoreply: from"},
		{func(c *Config) { c.Autoreply.Subject = "" }, "autoreply: subject"},
		{func(c *Config) { c.Autoreply.Subject = "a\nb" }, "autoreply: subject"},
		{func(c *Config) { c.Autoreply.BodyText = "" }, "autoreply: body_text is required"},
		{func(c *Config) { c.Autoreply.BodyText = "testdata/templates/broken.txt" }, "autoreply: body_text: template: testdata/templates/broken.txt:2:"},
		{func(c *Config) { c.Autoreply.Window = Duration(30 * time.Second) }, "autoreply: window 30s: want at least 1m"},
		{func(c *Config) { c.Routes[0].Name = AutoreplyRoute }, `route name "autoreply" is the autoreply's`},
	} {
		c := &Config{Form: "f", Routes: []Route{{Channel: outbox.ChannelEmail, To: []string{"a@example.com"}}}, Autoreply: ok()}
		tc.edit(c)
		if err := c.Provision(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("provision = %v, want %q", err, tc.want)
		}
	}
	c := &Config{Form: "f", Autoreply: ok()}
	if err := c.Provision(); err != nil || time.Duration(c.Autoreply.Window) != DefaultAutoreplyWindow {
		t.Fatalf("provision = %v, window %s; want the default window", err, time.Duration(c.Autoreply.Window))
	}
}

// TestAutoreplyStoredOncePerWindowOnEveryStore: two posts from one address within the
// window store one reply; the window passed, the next post gets its own.
func TestAutoreplyStoredOncePerWindowOnEveryStore(t *testing.T) {
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			c := autoreplyConfig(t, func(c *Config) { c.Autoreply.Window = Duration(time.Hour) })
			var replies []int
			for _, at := range []time.Time{testNow, testNow.Add(59 * time.Minute), testNow.Add(61 * time.Minute)} {
				res, err := c.Parse(postForm(form("name", "Ada", "email", "ada@example.com", "message", "Hi "+at.String())), at)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := outbox.Accept(context.Background(), store, res.Submission, res.Deliveries); err != nil {
					t.Fatal(err)
				}
				ds, err := store.ListDeliveries(context.Background(), res.Submission.ID)
				if err != nil {
					t.Fatal(err)
				}
				replies = append(replies, len(autoreplies(ds)))
			}
			if replies[0] != 1 || replies[1] != 0 || replies[2] != 1 {
				t.Fatalf("autoreplies stored per post = %v, want [1 0 1]", replies)
			}
		})
	}
}
