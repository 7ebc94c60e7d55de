package e2e

import (
	"database/sql"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/resendfake"
	"github.com/formoutbox/caddy-form-outbox/providers/sesfake"
)

// providersCaddyfile is the example contact form with SES and Resend configured, both
// pointed at local fakes through `endpoint`, with the secrets coming from placeholders.
const providersCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		email {
			from "Contact form <forms@example.com>"
			ses {
				region eu-west-1
				configuration_set forms
				access_key_id AKIDEXAMPLE
				secret_access_key {env.E2E_SES_SECRET}
				endpoint {{SES}}
			}
			resend {
				api_key {env.E2E_RESEND_KEY}
				endpoint {{RESEND}}
			}
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	root * {{SITE}}
	form_outbox /contact {
		form contact
		field name required max_length 120
		field email required email
		field message required max_length 5000
		honeypot _gotcha
		redirect /thanks.html
		notify email sales@example.com {
			subject "New enquiry from {field.name}"
		}
	}
	file_server
}
`

const (
	sesSecret = "e2e-ses-secret-wJalrXUtnFEMI"
	resendKey = "re_e2e_resend_key_123"
)

type attemptRow struct {
	Attempt           int
	Provider, Outcome string
	MessageID         string
}

func attemptsOf(t *testing.T, db *sql.DB, deliveryID string) []attemptRow {
	t.Helper()
	rows, err := db.Query(`SELECT attempt, provider, outcome, COALESCE(provider_message_id, '') FROM delivery_attempts WHERE delivery_id = ? ORDER BY attempt`, deliveryID)
	if err != nil {
		t.Fatalf("query attempts: %v", err)
	}
	defer rows.Close()
	var out []attemptRow
	for rows.Next() {
		var a attemptRow
		if err := rows.Scan(&a.Attempt, &a.Provider, &a.Outcome, &a.MessageID); err != nil {
			t.Fatalf("scan attempt: %v", err)
		}
		out = append(out, a)
	}
	return out
}

// sentDelivery waits until the only delivery of the submission whose data holds marker
// is sent, and returns its id and provider.
func sentDelivery(t *testing.T, db *sql.DB, marker string) (id, provider string) {
	t.Helper()
	err := waitFor(20*time.Second, func() bool {
		row := db.QueryRow(`SELECT d.id, COALESCE(d.provider, '') FROM deliveries d JOIN submissions s ON s.id = d.submission_id
			WHERE s.data LIKE ? AND d.status = 'sent'`, "%"+marker+"%")
		return row.Scan(&id, &provider) == nil
	})
	if err != nil {
		t.Fatalf("delivery of %q not sent: %v", marker, err)
	}
	return id, provider
}

// TestProvidersSESThenResend is issue 4's "done when": the example form sends through
// SES; with SES failing temporarily, the next post goes out through Resend, once, in the
// same attempt; each attempt row names its provider.
func TestProvidersSESThenResend(t *testing.T) {
	t.Parallel()
	sesFake := sesfake.New()
	defer sesFake.Close()
	resendFake := resendfake.New()
	defer resendFake.Close()
	resendFake.RequireAPIKey(resendKey)

	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cf := strings.NewReplacer("{{SES}}", sesFake.URL(), "{{RESEND}}", resendFake.URL(),
		"{{SITE}}", filepath.Join(root, "examples", "contact-form", "site")).Replace(providersCaddyfile)
	p := newCaddy(t, caddyOpts{Caddyfile: cf, Env: []string{"E2E_SES_SECRET=" + sesSecret, "E2E_RESEND_KEY=" + resendKey}})

	// The page itself is served, as in the example.
	if resp, body := do(t, getRequest(t, p.URL("/"))); resp.StatusCode != http.StatusOK || !strings.Contains(body, `name="message"`) {
		t.Fatalf("GET /: %d", resp.StatusCode)
	}

	post := func(marker string) {
		t.Helper()
		resp, _ := postForm(t, p, url.Values{"name": {"Ada " + marker}, "email": {"ada@example.org"},
			"message": {"Hello " + marker}, "_gotcha": {""}}, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/thanks.html" {
			t.Fatalf("post %s: %d %s", marker, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	db := openSQLite(t, filepath.Join(p.dir, "forms.db"))

	// 1. SES healthy: sent through SES.
	post("first-e2e")
	id1, prov1 := sentDelivery(t, db, "first-e2e")
	if prov1 != "ses" {
		t.Fatalf("first delivery sent by %q, want ses", prov1)
	}
	sent := sesFake.Sent()
	if len(sent) != 1 || sent[0].Email.Tag("outbox_id") != id1 || sent[0].Email.ConfigurationSetName != "forms" {
		t.Fatalf("SES got %d emails (%+v), want one tagged with delivery %s", len(sent), sent, id1)
	}
	e := sent[0].Email
	if e.FromEmailAddress != "Contact form <forms@example.com>" || strings.Join(e.ReplyToAddresses, ",") != "ada@example.org" ||
		e.Content.Simple.Subject.Data != "New enquiry from Ada first-e2e" || !strings.Contains(e.Content.Simple.Body.Text.Data, "Hello first-e2e") {
		t.Fatalf("SES email = %+v", e)
	}
	if as := attemptsOf(t, db, id1); len(as) != 1 || as[0].Provider != "ses" || as[0].Outcome != "sent" || as[0].MessageID != sent[0].MessageID {
		t.Fatalf("attempts of the first delivery: %+v", as)
	}
	if resendFake.Count() != 0 {
		t.Fatalf("Resend called %d times while SES was healthy", resendFake.Count())
	}

	// 2. SES failing temporarily: the same form goes out through Resend, once.
	sesFake.SetDefault(sesfake.Unavailable())
	post("second-e2e")
	id2, prov2 := sentDelivery(t, db, "second-e2e")
	if prov2 != "resend" {
		t.Fatalf("second delivery sent by %q, want resend", prov2)
	}
	emails := resendFake.Emails()
	if len(emails) != 1 || resendFake.Count() != 1 {
		t.Fatalf("Resend: %d requests, %d emails; want exactly one", resendFake.Count(), len(emails))
	}
	if emails[0].IdempotencyKey != id2 || emails[0].Email.Subject != "New enquiry from Ada second-e2e" || emails[0].Email.ReplyTo != "ada@example.org" {
		t.Fatalf("Resend email = %+v (key %q), want key %s", emails[0].Email, emails[0].IdempotencyKey, id2)
	}
	if as := attemptsOf(t, db, id2); len(as) != 1 || as[0].Provider != "resend" || as[0].Outcome != "sent" || as[0].MessageID != emails[0].ID {
		t.Fatalf("attempts of the second delivery: %+v (want one attempt, by resend)", as)
	}
	if n := sesFake.Count(); n != 2 {
		t.Fatalf("SES received %d requests, want 2 (one per attempt, no SDK retries)", n)
	}

	// Secrets reach the providers but never the log.
	if !strings.Contains(sent[0].Request.Header.Get("Authorization"), "Credential=AKIDEXAMPLE/") {
		t.Errorf("SES request not signed with the configured key: %q", sent[0].Request.Header.Get("Authorization"))
	}
	if log := p.Log(); strings.Contains(log, sesSecret) || strings.Contains(log, resendKey) {
		t.Errorf("a secret reached the log:\n%s", log)
	}
}

func getRequest(t *testing.T, u string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
