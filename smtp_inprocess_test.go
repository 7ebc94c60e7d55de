package formoutbox

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/smtpfake"
)

// smtpCaddyfile is a site whose form sends its email through `email { smtp { ... } }`
// over STARTTLS with AUTH, the password from an environment placeholder.
const smtpCaddyfile = `{
	form_outbox {
		storage sqlite {{DB}}
		email {
			from "Example Forms <forms@example.com>"
			smtp {
				address {{SMTP}}
				username forms@example.com
				password {env.FORM_OUTBOX_TEST_SMTP_PASSWORD}
				tls starttls
				ca_file {{CA}}
				helo forms.test
				timeout 5s
			}
		}
	}
}
http://{{ADDR}} {
	form_outbox /contact {
		form contact
		field name required
		field email required email
		redirect /thanks.html
		notify email owner@example.com {
			subject "Enquiry from {field.name} ✓"
		}
	}
	respond "page"
}
`

// TestInProcessSMTPFromCaddyfile adapts a Caddyfile with an smtp block, runs it, posts
// the form, and checks what the SMTP server received and what the outbox recorded.
func TestInProcessSMTPFromCaddyfile(t *testing.T) {
	const password = "in-process-smtp-password"
	t.Setenv("FORM_OUTBOX_TEST_SMTP_PASSWORD", password)
	srv := smtpfake.New(smtpfake.Config{Username: "forms@example.com", Password: password})
	defer srv.Close()

	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, srv.CAPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cf := strings.NewReplacer("{{DB}}", filepath.Join(dir, "forms.db"), "{{SMTP}}", srv.Addr(),
		"{{CA}}", caFile, "{{ADDR}}", addr).Replace(smtpCaddyfile)
	raw, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("adapt: %v %+v", err, warnings)
	}
	var cfg struct{ Apps map[string]any }
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	runCaddy(t, cfg.Apps)

	resp := postContact(t, addr)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /contact: got %d, want 303", resp.StatusCode)
	}
	app := runningApp(t)
	if app.emailProviderName != "smtp" {
		t.Errorf("email provider %q, want smtp", app.emailProviderName)
	}
	if got := app.Email.SMTP.Password; got != "{env.FORM_OUTBOX_TEST_SMTP_PASSWORD}" {
		t.Errorf("the running config's password is %q, want the placeholder as written", got)
	}
	store := app.store
	sub := onlySubmission(t, store)
	var d outbox.Delivery
	waitFor(t, "the delivery to be recorded sent", func() bool {
		ds, err := store.ListDeliveries(context.Background(), sub.ID)
		if err != nil || len(ds) != 1 {
			return false
		}
		d = ds[0]
		return d.Status == outbox.DeliverySent
	})
	wantID := "<" + d.ID.String() + "@example.com>"
	if d.Provider != "smtp" || d.ProviderMessageID != wantID {
		t.Errorf("delivery sent by %q as %q, want smtp %q", d.Provider, d.ProviderMessageID, wantID)
	}

	got := srv.Delivered()
	if len(got) != 1 {
		t.Fatalf("the SMTP server took %d messages, want 1", len(got))
	}
	m := got[0]
	if m.From != "forms@example.com" || len(m.To) != 1 || m.To[0] != "owner@example.com" || !m.TLS || m.Auth != "forms@example.com" {
		t.Errorf("envelope %q -> %q, TLS %v, auth %q", m.From, m.To, m.TLS, m.Auth)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if subject != "Enquiry from Ada ✓" || msg.Header.Get("Message-ID") != wantID || msg.Header.Get("Reply-To") != "<ada@example.com>" {
		t.Errorf("Subject %q Message-ID %q Reply-To %q", subject, msg.Header.Get("Message-ID"), msg.Header.Get("Reply-To"))
	}
}
