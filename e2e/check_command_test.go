package e2e

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers/smtpfake"
	"github.com/formoutbox/caddy-form-outbox/providers/telegramfake"
)

const checkCaddyfile = `{
	admin off
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		email {
			from "Forms <forms@example.com>"
			smtp {
				address {{SMTP}}
				username forms
				password {env.E2E_SMTP_PASSWORD}
				server_name localhost
				ca_file {{DIR}}/ca.pem
			}
		}
		alerts {
			email owner@example.com
		}
	}
}
:0 {
	form_outbox /contact {
		field name required
		notify email sales@example.com
		notify webhook {{HOOK}}
		notify telegram -100123 {
			token {env.E2E_TELEGRAM_TOKEN}
			endpoint {{TELEGRAM}}
		}
	}
	form_outbox /survey {
		store_only
	}
}
`

// checkRun runs `caddy form-outbox check` on caddyfile in dir with env.
func checkRun(t *testing.T, dir, caddyfile string, env ...string) (string, bool) {
	t.Helper()
	return runOnCaddyfile(t, dir, caddyfile, env, "form-outbox", "check", "--timeout", "5s")
}

// TestCheckCommand: through the built binary, `form-outbox check` reports the store's
// migration and one ready line per route against the fakes, exit status 0, and sends
// nothing; with a wrong SMTP password and a webhook nobody listens on, those two lines
// say what is wrong, the others stay ready, and the exit status is 1. A config that
// does not load fails with its line.
func TestCheckCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	relay := smtpfake.New(smtpfake.Config{Username: "forms", Password: "relay-secret"})
	t.Cleanup(relay.Close)
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), relay.CAPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the check made an HTTP request") }))
	t.Cleanup(hook.Close)
	bot := telegramfake.New(telegramToken)
	t.Cleanup(bot.Close)
	cf := strings.NewReplacer("{{DIR}}", dir, "{{SMTP}}", relay.Addr(), "{{HOOK}}", hook.URL+"/crm",
		"{{TELEGRAM}}", bot.URL()).Replace(checkCaddyfile)
	env := []string{"E2E_SMTP_PASSWORD=relay-secret", "E2E_TELEGRAM_TOKEN=" + telegramToken}

	out, ok := checkRun(t, dir, cf, env...)
	want := "store sqlite " + filepath.Join(dir, "forms.db") + " (migration "
	for _, line := range []string{want, "form contact route email: ready\n", "form contact route webhook: ready\n",
		"form contact route telegram: ready\n", "form survey: ready\n", "alerts target email: ready\n"} {
		if !ok || !strings.Contains(out, line) {
			t.Fatalf("check ok=%v, want %q in:\n%s", ok, line, out)
		}
	}
	if len(relay.Received()) != 0 || len(bot.Messages()) != 0 {
		t.Fatal("the check sent a message")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	broken := strings.Replace(cf, hook.URL+"/crm", "http://"+dead+"/crm", 1)
	out, ok = checkRun(t, dir, broken, "E2E_SMTP_PASSWORD=wrong", "E2E_TELEGRAM_TOKEN="+telegramToken)
	for _, line := range []string{
		"form contact route email: e-mail provider smtp: ",
		"form contact route webhook: connect to " + dead + ": ",
		"form contact route telegram: ready\n",
		"alerts target email: e-mail provider smtp: ",
		"not every route is ready",
	} {
		if ok || !strings.Contains(out, line) {
			t.Errorf("check ok=%v, want %q in:\n%s", ok, line, out)
		}
	}
	if strings.Contains(out, "relay-secret") || strings.Contains(out, telegramToken) {
		t.Errorf("a secret in the output:\n%s", out)
	}

	out, ok = checkRun(t, dir, strings.Replace(cf, "notify email sales@example.com", "notify email sales@example.com {\n\t\t\twhen field nmae is x\n\t\t}", 1), env...)
	if ok || !strings.Contains(out, `when: field "nmae" is not declared (declared: name); did you mean "name"?, at `+filepath.Join(dir, "Caddyfile")+":24") {
		t.Errorf("check of a bad config ok=%v:\n%s", ok, out)
	}
}
