package e2e

import (
	"fmt"
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/telegramfake"
)

const bidiCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		worker {
			poll_interval 300ms
		}
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
		inbox_url https://admin.example.com/inbox
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		notify telegram -100123 {
			token {env.E2E_TELEGRAM_TOKEN}
			endpoint {{TELEGRAM}}
			text {{DIR}}/lead.html
		}
		notify email sales@example.com {
			subject "New enquiry from {field.name} about {field.topic}"
		}
	}
}
`

// Through the built Caddy: a visitor's name ending in U+202E (right-to-left override)
// reverses nothing after it. The exact bytes the Telegram fake received carry the name
// isolated (U+2068 ... U+2069) without the override, and the e-mail's Subject has none.
func TestAVisitorsOverrideReversesNothingItIsSentWith(t *testing.T) {
	t.Parallel()
	tg := telegramfake.New(telegramToken)
	t.Cleanup(tg.Close)
	dir := t.TempDir()
	tmpl := "<b>Lead from {{field \"name\"}}</b> — <a href=\"{{.Link}}\">open</a>\n"
	if err := os.WriteFile(filepath.Join(dir, "lead.html"), []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	cf := strings.ReplaceAll(bidiCaddyfile, "{{TELEGRAM}}", tg.URL())
	p := newCaddy(t, caddyOpts{Caddyfile: cf, Dir: dir, Env: []string{"E2E_TELEGRAM_TOKEN=" + telegramToken}})
	id := postAdminForm(t, p, "/contact", url.Values{"name": {"Mallory\u202e"}, "topic": {"sales"}})

	if err := waitFor(30*time.Second, func() bool { return len(tg.Messages()) == 1 }); err != nil {
		t.Fatalf("telegram got %d messages\n%s", len(tg.Messages()), p.Log())
	}
	want := fmt.Sprintf("<b>Lead from \u2068Mallory\u2069</b> — <a href=\"https://admin.example.com/inbox/submissions/%s\">open</a>\n", id)
	if got := tg.Messages()[0].Message.Text; got != want {
		t.Fatalf("telegram text\n got %q\nwant %q", got, want)
	}
	var subject string
	if err := waitFor(30*time.Second, func() bool {
		ms := mailsTo(t, filepath.Join(dir, "mail"), "sales@example.com")
		if len(ms) == 1 {
			subject, _ = new(mime.WordDecoder).DecodeHeader(ms[0].Header.Get("Subject"))
		}
		return len(ms) == 1
	}); err != nil {
		t.Fatalf("no e-mail to sales@example.com\n%s", p.Log())
	}
	if subject != "New enquiry from Mallory about sales" {
		t.Fatalf("subject %q", subject)
	}
}
