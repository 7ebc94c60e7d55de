package e2e

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/telegramfake"
)

const unroutedAlertsCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
		worker {
			poll_interval 300ms
		}
		alerts {
			notify telegram -100777 {
				token {env.E2E_TELEGRAM_TOKEN}
				endpoint {{TELEGRAM}}
			}
			interval 200ms
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		notify email sales@example.com {
			when field topic is sales
			subject "Lead from {field.name}"
		}
	}
}
`

// TestAlertsForUnroutedAndEmptyTemplate: through the built Caddy, a post no route takes
// and a post missing the field its subject prints each raise an owner alert, sent to the
// owner's Telegram, naming the form (and for the template the route, option and field),
// never a value the visitor typed.
func TestAlertsForUnroutedAndEmptyTemplate(t *testing.T) {
	t.Parallel()
	tg := telegramfake.New(telegramToken)
	t.Cleanup(tg.Close)
	p := newCaddy(t, caddyOpts{Caddyfile: strings.ReplaceAll(unroutedAlertsCaddyfile, "{{TELEGRAM}}", tg.URL()),
		Env: []string{"E2E_TELEGRAM_TOKEN=" + telegramToken}})
	if !strings.Contains(p.Log(), "a post where topic is not sales takes no route") {
		t.Errorf("no uncovered-case warning at load:\n%s", p.Log())
	}
	postAdminForm(t, p, "/contact", url.Values{"topic": {"support"}, "name": {"Visitor Secret"}})
	postAdminForm(t, p, "/contact", url.Values{"topic": {"sales"}, "message": {"typed secret"}})

	var unrouted, empty string
	if err := waitFor(30*time.Second, func() bool {
		for _, m := range tg.Messages() {
			switch {
			case strings.Contains(m.Visible, "matched no route"):
				unrouted = m.Visible
			case strings.Contains(m.Visible, "empty field"):
				empty = m.Visible
			}
		}
		return unrouted != "" && empty != ""
	}); err != nil {
		t.Fatalf("alerts: unrouted %q, template empty %q: %v\n%s", unrouted, empty, err, p.Log())
	}
	if !strings.Contains(unrouted, "1 submission(s) to form contact matched no route") ||
		!strings.Contains(empty, "1 submission(s) to form contact were notified with an empty field") ||
		!strings.Contains(empty, "route email subject: name") {
		t.Errorf("alert texts:\n%s\n%s", unrouted, empty)
	}
	for _, m := range tg.Messages() {
		if strings.Contains(m.Visible, "secret") || strings.Contains(m.Visible, "Secret") {
			t.Errorf("visitor data in an alert: %q", m.Visible)
		}
	}
}
