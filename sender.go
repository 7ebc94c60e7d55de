package formoutbox

import (
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/file"
	"github.com/formoutbox/caddy-form-outbox/providers/webhook"
)

// buildSender wires the providers: email through the file provider (the only email
// provider so far, and the default when none is configured), webhooks signed with the
// secrets the form handlers register.
func (a *App) buildSender() (outbox.Sender, error) {
	email, err := file.New(file.Config{Dir: a.mailDir, From: a.from})
	if err != nil {
		return nil, fmt.Errorf("email: %w", err)
	}
	hook := webhook.New(webhook.Config{Secret: a.webhookSecret})
	return outbox.Router{Email: email, Webhook: hook}, nil
}
