package formoutbox

import (
	"fmt"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
	"github.com/formoutbox/caddy-form-outbox/providers/discord"
	"github.com/formoutbox/caddy-form-outbox/providers/slack"
	"github.com/formoutbox/caddy-form-outbox/providers/teams"
	"github.com/formoutbox/caddy-form-outbox/providers/telegram"
)

// chatRouter adds the chat providers to the router. They post the bodies intake
// rendered; Telegram looks up the bot of a delivery's chat id in what the form
// handlers registered, so a token changed in the Caddyfile applies to stored
// deliveries, and a token is never stored with one.
func (a *App) chatRouter(r outbox.Router) (outbox.Router, error) {
	tg, err := telegram.New(telegram.Config{Bot: a.telegramBot})
	if err != nil {
		return r, fmt.Errorf("telegram: %w", err)
	}
	cfg := chat.Config{}
	r.Telegram, r.Slack, r.Discord, r.Teams = tg, slack.New(cfg), discord.New(cfg), teams.New(cfg)
	return r, nil
}

// resolveTelegramBots resolves the placeholders of the Telegram routes' tokens and
// endpoints into the routes, before intake checks them; like webhook secrets they are
// never written back to the config the user sees.
func resolveTelegramBots(repl *caddy.Replacer, routes []intake.Route) {
	for i := range routes {
		r := &routes[i]
		r.Token = strings.TrimSpace(repl.ReplaceKnown(r.Token, ""))
		r.Endpoint = strings.TrimSpace(repl.ReplaceKnown(r.Endpoint, ""))
	}
}

// registerTelegramBots registers the bot of every Telegram route of a form.
func (a *App) registerTelegramBots(form string, routes []intake.Route) error {
	for _, r := range routes {
		if r.Channel != outbox.ChannelTelegram {
			continue
		}
		if err := a.registerTelegramBot(r.ChatID, telegram.Bot{Token: r.Token, Endpoint: r.Endpoint}); err != nil {
			return fmt.Errorf("form_outbox: form %s: route %s: %w", form, r.Name, err)
		}
	}
	return nil
}

// registerTelegramBot records the bot that posts to a chat id. The bot is found by the
// chat id at send time, so two routes to one chat must name the same bot.
func (a *App) registerTelegramBot(chatID string, bot telegram.Bot) error {
	a.secretsMu.Lock()
	defer a.secretsMu.Unlock()
	if a.bots == nil {
		a.bots = make(map[string]telegram.Bot)
	}
	if old, ok := a.bots[chatID]; ok && old != bot {
		return fmt.Errorf("telegram chat %s is configured with two different tokens or endpoints", chatID)
	}
	a.bots[chatID] = bot
	return nil
}

// telegramBot is the Telegram provider's Bot hook.
func (a *App) telegramBot(chatID string) (telegram.Bot, bool) {
	a.secretsMu.RLock()
	defer a.secretsMu.RUnlock()
	bot, ok := a.bots[chatID]
	return bot, ok
}
