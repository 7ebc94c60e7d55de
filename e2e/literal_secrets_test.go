package e2e

import (
	"strings"
	"testing"
)

// A Caddyfile with a bot token and a Slack URL written literally, and the webhook secret
// and a Discord URL through {env.X}: the built Caddy starts (the Discord URL resolved at
// provision), warns at load about the two literal ones, naming each option and its
// Caddyfile line, and its log quotes no secret.
func TestLiteralSecretsWarnedAtLoad(t *testing.T) {
	t.Parallel()
	const token, slackURL = "123456:AAliteral-bot-token", "https://hooks.slack.com/services/T0/B0/literalslack"
	const discordURL = "https://discord.com/api/webhooks/1/env-discord"
	c := newCaddy(t, caddyOpts{Env: []string{"E2E_WHSEC=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "E2E_DISCORD=" + discordURL}, Caddyfile: `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		worker off
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		notify telegram -100123 {
			token ` + token + `
		}
		notify slack ` + slackURL + `
		notify discord {env.E2E_DISCORD}
		notify webhook https://hooks.example.com/in {
			secret {env.E2E_WHSEC}
		}
	}
}
`})
	log := c.Log()
	for _, want := range []string{`"option":"notify telegram token"`, `"line":12`, `"option":"notify slack"`, `"line":14`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "a secret is written literally"); n != 2 {
		t.Errorf("%d literal-secret warnings, want 2", n)
	}
	for _, secret := range []string{token, slackURL, discordURL, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		if strings.Contains(log, secret) {
			t.Errorf("the log quotes a secret")
		}
	}
}
