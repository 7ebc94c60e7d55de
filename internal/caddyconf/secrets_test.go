package caddyconf

import (
	"fmt"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// secretsCaddyfile writes every secret option once; {{...}} is each one's value.
const secretsCaddyfile = `{
	form_outbox {
		storage postgres "{{DSN}}"
		email {
			from forms@example.com
			ses {
				region eu-west-1
				access_key_id AKIDEXAMPLE
				secret_access_key {{SES}}
			}
			resend {
				api_key {{RESEND}}
			}
			smtp mail.example.com:587 {
				username forms
				password {{SMTP}}
			}
		}
	}
}
example.com {
	form_outbox /contact {
		form contact
		field token required
		turnstile {{TURNSTILE}}
		notify webhook https://hooks.example.com/in {
			secret {{WHSEC}}
			header Authorization "{{AUTH}}"
			header X-Source website
		}
		notify telegram -100123 {
			token {{TELEGRAM}}
		}
		notify slack {{SLACK}}
		notify discord {{DISCORD}}
		notify teams {{TEAMS}}
	}
	form_outbox_feedback /feedback {
		resend {
			secret {{FEEDBACK}}
		}
	}
}
`

// literalWarnings scans a Caddyfile and returns the warnings logged.
func literalWarnings(t *testing.T, input string) []observer.LoggedEntry {
	t.Helper()
	core, logs := observer.New(zapcore.WarnLevel)
	d := caddyfile.NewTestDispenser(input)
	WarnLiteralSecrets(d, zap.New(core))
	return logs.All()
}

// Every secret written literally in a Caddyfile is warned about at load, naming the
// option and its file:line and never the value; a placeholder ({env.X}, {file./path},
// or one inside a URL or DSN) draws no warning, nor does a field named like an option.
func TestLiteralSecretsAreWarnedAbout(t *testing.T) {
	literal := map[string]string{
		"{{DSN}}": "postgres://forms:pg-pass-1@db.example.com/forms", "{{SES}}": "ses-secret-2",
		"{{RESEND}}": "re_resend3", "{{SMTP}}": "smtp-pass-4", "{{TURNSTILE}}": "0x4AAturnstile5",
		"{{WHSEC}}": "whsec_webhook6", "{{AUTH}}": "Bearer auth-7", "{{TELEGRAM}}": "123:telegram8",
		"{{SLACK}}":   "https://hooks.slack.com/services/T/B/slack9",
		"{{DISCORD}}": "https://discord.com/api/webhooks/1/discord10",
		"{{TEAMS}}":   "https://x.webhook.office.com/teams11", "{{FEEDBACK}}": "whsec_feedback12",
	}
	var pairs []string
	for k, v := range literal {
		pairs = append(pairs, k, v)
	}
	input := strings.NewReplacer(pairs...).Replace(secretsCaddyfile)
	got := map[string]int{} // option -> line
	for _, e := range literalWarnings(t, input) {
		all := e.Message + fmt.Sprint(e.ContextMap())
		for _, v := range literal {
			if strings.Contains(all, v) || strings.Contains(all, "pg-pass-1") {
				t.Errorf("warning %q %v quotes a secret", e.Message, e.ContextMap())
			}
		}
		if !strings.Contains(all, "{env.") || !strings.Contains(all, "{file.") {
			t.Errorf("warning %q %v suggests no placeholder", e.Message, e.ContextMap())
		}
		f := e.ContextMap()
		if f["file"] != "Testfile" {
			t.Errorf("warning %v names no file", f)
		}
		option := fmt.Sprint(f["option"])
		if _, twice := got[option]; twice {
			t.Errorf("option %q warned twice", option)
		}
		got[option] = int(f["line"].(int64))
	}
	want := map[string]int{
		"storage postgres": 3, "ses secret_access_key": 9, "resend api_key": 12, "smtp password": 16,
		"turnstile": 25, "notify webhook secret": 27, "notify webhook header Authorization": 28,
		"notify telegram token": 32, "notify slack": 34, "notify discord": 35, "notify teams": 36,
		"resend secret": 40,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("warned options and lines:\n%v\nwant\n%v", got, want)
	}

	placeholders := map[string]string{
		"{{DSN}}": "postgres://forms:{env.PGPASSWORD}@db.example.com/forms", "{{SES}}": "{env.AWS_SECRET_ACCESS_KEY}",
		"{{RESEND}}": "{file./run/secrets/resend}", "{{SMTP}}": "{env.SMTP_PASSWORD}", "{{TURNSTILE}}": "{env.TURNSTILE}",
		"{{WHSEC}}": "{env.WHSEC}", "{{AUTH}}": "Bearer {env.HOOK_TOKEN}", "{{TELEGRAM}}": "{env.TELEGRAM_TOKEN}",
		"{{SLACK}}": "{env.SLACK_URL}", "{{DISCORD}}": "https://discord.com/api/webhooks/{env.DISCORD_PATH}",
		"{{TEAMS}}": "{file./run/secrets/teams}", "{{FEEDBACK}}": "{env.RESEND_WEBHOOK_SECRET}",
	}
	pairs = nil
	for k, v := range placeholders {
		pairs = append(pairs, k, v)
	}
	if ws := literalWarnings(t, strings.NewReplacer(pairs...).Replace(secretsCaddyfile)); len(ws) != 0 {
		for _, e := range ws {
			t.Errorf("warning for a placeholder: %q %v", e.Message, e.ContextMap())
		}
	}
	// A DSN without a password is no secret.
	if ws := literalWarnings(t, "{\n\tform_outbox {\n\t\tstorage postgres postgres://forms@db/forms\n\t}\n}\n"); len(ws) != 0 {
		t.Errorf("warning for a DSN without a password: %v", ws[0].ContextMap())
	}
}
