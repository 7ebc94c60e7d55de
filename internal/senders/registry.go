package senders

import (
	"fmt"
	"maps"
	"sync"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/telegram"
)

// Registry holds what the form handlers register for the providers: the signing secret
// and extra headers of each webhook URL and the bot of each Telegram chat id. The
// providers look them up at send time, so a secret or token changed in the config
// applies to stored deliveries, and none is ever stored with a delivery. The zero value
// is ready to use and safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	secrets map[string]string            // webhook URL -> signing secret
	headers map[string]map[string]string // webhook URL -> extra headers
	bots    map[string]telegram.Bot      // Telegram chat id -> its bot
	rates   map[rateTarget]float64       // a route's target -> its sends a second, 0 off
}

// rateTarget is what a route's `rate` applies to: a webhook or chat URL, or a Telegram
// chat id, of one channel.
type rateTarget struct {
	channel outbox.Channel
	target  string
}

// RegisterWebhookSecret records the signing secret of a webhook URL. Two forms may
// notify one URL only with the same secret: the receiver checks one key per endpoint.
func (r *Registry) RegisterWebhookSecret(url, secret string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.secrets[url]; ok && old != secret {
		return fmt.Errorf("webhook %s is configured with two different secrets", url)
	}
	if r.secrets == nil {
		r.secrets = make(map[string]string)
	}
	r.secrets[url] = secret
	return nil
}

// RegisterWebhookHeaders records the extra headers of a webhook URL. Like secrets, two
// forms may notify one URL only with the same headers.
func (r *Registry) RegisterWebhookHeaders(url string, headers map[string]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.headers[url]; ok && !maps.Equal(old, headers) {
		return fmt.Errorf("webhook %s is configured with two different sets of headers", url)
	}
	if r.headers == nil {
		r.headers = make(map[string]map[string]string)
	}
	r.headers[url] = maps.Clone(headers)
	return nil
}

// RegisterTelegramBots registers the bot of every Telegram route of a form, whose
// tokens and endpoints the caller has already resolved.
func (r *Registry) RegisterTelegramBots(form string, routes []intake.Route) error {
	for _, rt := range routes {
		if rt.Channel != outbox.ChannelTelegram {
			continue
		}
		if err := r.registerTelegramBot(rt.ChatID, telegram.Bot{Token: rt.Token, Endpoint: rt.Endpoint}); err != nil {
			return fmt.Errorf("form_outbox: form %s: route %s: %w", form, rt.Name, err)
		}
	}
	return nil
}

// registerTelegramBot records the bot that posts to a chat id. The bot is found by the
// chat id at send time, so two routes to one chat must name the same bot. The error
// names the chat, never the token.
func (r *Registry) registerTelegramBot(chatID string, bot telegram.Bot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.bots[chatID]; ok && old != bot {
		return fmt.Errorf("telegram chat %s is configured with two different tokens or endpoints", chatID)
	}
	if r.bots == nil {
		r.bots = make(map[string]telegram.Bot)
	}
	r.bots[chatID] = bot
	return nil
}

// WebhookSecret is the webhook provider's Secret hook.
func (r *Registry) WebhookSecret(url string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.secrets[url]
}

// WebhookHeaders is the webhook provider's Headers hook.
func (r *Registry) WebhookHeaders(url string) map[string]string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.headers[url]
}

// TelegramBot is the Telegram provider's Bot hook.
func (r *Registry) TelegramBot(chatID string) (telegram.Bot, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	bot, ok := r.bots[chatID]
	return bot, ok
}

// RegisterRates records the send rate of every webhook and chat route of a form (its
// `rate`, or the channel's default when unset). Two routes to one target must agree: the
// rate is the target's, whichever form posts to it. The error names a webhook's URL or a
// Telegram chat, never a chat service's URL, which is a credential.
func (r *Registry) RegisterRates(form string, routes []intake.Route) error {
	for _, rt := range routes {
		target := rt.URL
		switch rt.Channel {
		case outbox.ChannelEmail:
			continue
		case outbox.ChannelTelegram:
			target = rt.ChatID
		}
		perSecond, err := routeRate(rt.Channel, rt.Rate)
		if err != nil {
			return fmt.Errorf("form_outbox: form %s: route %s: %w", form, rt.Name, err)
		}
		if err := r.registerRate(rateTarget{rt.Channel, target}, perSecond); err != nil {
			return fmt.Errorf("form_outbox: form %s: route %s: %w", form, rt.Name, err)
		}
	}
	return nil
}

func (r *Registry) registerRate(t rateTarget, perSecond float64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.rates[t]; ok && old != perSecond {
		switch t.channel {
		case outbox.ChannelWebhook:
			return fmt.Errorf("webhook %s is configured with two different rates", t.target)
		case outbox.ChannelTelegram:
			return fmt.Errorf("telegram chat %s is configured with two different rates", t.target)
		default:
			return fmt.Errorf("one %s webhook is configured with two different rates", t.channel)
		}
	}
	if r.rates == nil {
		r.rates = make(map[rateTarget]float64)
	}
	r.rates[t] = perSecond
	return nil
}

// rate is the sends a second registered for a channel's target, or the channel's
// default for a target no route names (a delivery stored under an earlier config).
func (r *Registry) rate(ch outbox.Channel, target string) float64 {
	r.mu.RLock()
	perSecond, ok := r.rates[rateTarget{ch, target}]
	r.mu.RUnlock()
	if ok {
		return perSecond
	}
	perSecond, _ = routeRate(ch, "")
	return perSecond
}
