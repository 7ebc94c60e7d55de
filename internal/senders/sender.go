package senders

import (
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
	"github.com/formoutbox/caddy-form-outbox/providers/discord"
	"github.com/formoutbox/caddy-form-outbox/providers/slack"
	"github.com/formoutbox/caddy-form-outbox/providers/teams"
	"github.com/formoutbox/caddy-form-outbox/providers/telegram"
	"github.com/formoutbox/caddy-form-outbox/providers/webhook"
)

// New wires the Sender a worker delivers through: email goes to the given provider;
// webhooks are signed with the secrets, and carry the headers, registered in reg; the
// chat providers post the bodies intake rendered, Telegram through the bot reg holds
// for a delivery's chat id. Suppressed addresses are refused before any provider is
// called; suppressed returns the suppression list, or nil while no store is open.
// files returns the store attachments are read from, nil while no store is open.
func New(email providers.Provider, reg *Registry, suppressed func() outbox.FeedbackStore, files func() outbox.FileStore) (outbox.Sender, error) {
	tg, err := telegram.New(telegram.Config{Bot: reg.TelegramBot})
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	cfg := chat.Config{}
	router := outbox.Router{
		Email:    email,
		Webhook:  webhook.New(webhook.Config{Secret: reg.WebhookSecret, Headers: reg.WebhookHeaders}),
		Telegram: tg,
		Slack:    slack.New(cfg),
		Discord:  discord.New(cfg),
		Teams:    teams.New(cfg),
		Files:    files,
	}
	return outbox.SuppressionGuard{Next: router, List: suppressed}, nil
}
