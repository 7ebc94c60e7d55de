package intake

import (
	"context"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// TestEmailTemplatesStoredOnEveryStore: an email route's body_text and body_html are
// rendered at intake, html/template escaping the visitor's markup, and the stored
// payload holds the rendered bodies, on SQLite and PostgreSQL.
func TestEmailTemplatesStoredOnEveryStore(t *testing.T) {
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			c := &Config{Form: "contact", InboxURL: "https://admin.example.com/inbox", IPHashKey: []byte("k"),
				Routes: []Route{{Channel: outbox.ChannelEmail, To: []string{"sales@example.com"}, Subject: "Lead {field.name}",
					BodyText: "testdata/templates/lead.txt", BodyHTML: "testdata/templates/lead.html"}}}
			if err := c.Provision(); err != nil {
				t.Fatal(err)
			}
			res := mustParse(t, c, postForm(form("name", "<script>Ada</script>", "message", "Hello world")))
			if _, err := outbox.Accept(context.Background(), store, res.Submission, res.Deliveries); err != nil {
				t.Fatal(err)
			}
			ds, err := store.ListDeliveries(context.Background(), res.Submission.ID)
			if err != nil || len(ds) != 1 {
				t.Fatalf("deliveries %+v, %v", ds, err)
			}
			p := payloadOf(t, ds[0])
			id := res.Submission.ID.String()
			wantText := "Lead for CONTACT (" + id + ")\n- name = <script>Ada</script>\n- message = Hello world\nMessage: Hello\n" +
				"Inbox: https://admin.example.com/inbox/submissions/" + id + "\n"
			wantHTML := "<p>Lead from <b>&lt;script&gt;Ada&lt;/script&gt;</b></p>\n<a href=\"https://admin.example.com/inbox/submissions/" + id + "\">inbox</a>\n"
			if p.Text != wantText || p.HTML != wantHTML || p.Subject != "Lead <script>Ada</script>" {
				t.Fatalf("payload text %q\nwant %q\nhtml %q\nwant %q\nsubject %q", p.Text, wantText, p.HTML, wantHTML, p.Subject)
			}
		})
	}
}

func TestTemplateProvisionErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		route Route
		want  string
	}{
		{Route{Channel: outbox.ChannelEmail, To: []string{"a@example.com"}, BodyText: "testdata/templates/broken.txt"},
			"notify email: body_text: template: testdata/templates/broken.txt:2:"},
		{Route{Channel: outbox.ChannelEmail, To: []string{"a@example.com"}, BodyText: "testdata/templates/badcall.txt"},
			"notify email: body_text: template: testdata/templates/badcall.txt:2:"},
		{Route{Channel: outbox.ChannelEmail, To: []string{"a@example.com"}, BodyHTML: "testdata/templates/missing.html"},
			"notify email: body_html: open testdata/templates/missing.html: no such file"},
		{Route{Channel: outbox.ChannelWebhook, URL: "https://crm.example.com/h", BodyText: "testdata/templates/lead.txt"},
			"body_text and body_html are for email routes"},
	} {
		c := &Config{Form: "f", Routes: []Route{tc.route}}
		if err := c.Provision(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("provision: %v, want %q", err, tc.want)
		}
	}
}
