package senders

import (
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/discord"
	"github.com/formoutbox/caddy-form-outbox/providers/ratelimit"
	"github.com/formoutbox/caddy-form-outbox/providers/resend"
	"github.com/formoutbox/caddy-form-outbox/providers/ses"
	"github.com/formoutbox/caddy-form-outbox/providers/slack"
	"github.com/formoutbox/caddy-form-outbox/providers/teams"
	"github.com/formoutbox/caddy-form-outbox/providers/telegram"
)

// Pacer is the worker's outbox.Pacer for the App's providers (docs/design.md, "Pacing"):
// e-mail at the rate of the chain's first provider, each webhook and chat URL at its
// route's rate, each Telegram chat at its route's rate and each bot at telegram.BotRate.
// Rates hold per Caddy instance.
type Pacer struct {
	// Email is the e-mail chain's sends a second (EmailRate); 0 means unpaced.
	Email float64
	// Registry holds the routes' rates (Registry.RegisterRates) and the Telegram bots.
	Registry *Registry

	p ratelimit.Pacer
}

// Reserve implements outbox.Pacer.
func (p *Pacer) Reserve(d outbox.Delivery, now time.Time) (bool, time.Time) {
	return p.p.Reserve(d.ID.String(), p.limits(d), now)
}

// limits are the rates a delivery's send must respect, each keyed by what it applies to.
func (p *Pacer) limits(d outbox.Delivery) []ratelimit.Limit {
	var ls []ratelimit.Limit
	add := func(key string, perSecond float64) {
		if perSecond > 0 {
			ls = append(ls, ratelimit.Limit{Key: key, PerSecond: perSecond})
		}
	}
	switch d.Channel {
	case outbox.ChannelEmail:
		add("email", p.Email)
	case outbox.ChannelTelegram:
		add("telegram chat "+d.Recipient, p.Registry.rate(d.Channel, d.Recipient))
		// The key is the bot's token: it never leaves this process's memory.
		if bot, ok := p.Registry.TelegramBot(d.Recipient); ok {
			add("telegram bot "+bot.Token, telegram.BotRate)
		}
	default:
		add(string(d.Channel)+" "+d.Recipient, p.Registry.rate(d.Channel, d.Recipient))
	}
	return ls
}

// routeRate is a webhook or chat route's sends a second: its `rate`, or its channel's
// default when rate is empty (webhooks: unpaced).
func routeRate(ch outbox.Channel, rate string) (float64, error) {
	if rate == "" {
		switch ch {
		case outbox.ChannelTelegram:
			rate = telegram.DefaultRate
		case outbox.ChannelSlack:
			rate = slack.DefaultRate
		case outbox.ChannelDiscord:
			rate = discord.DefaultRate
		case outbox.ChannelTeams:
			rate = teams.DefaultRate
		default:
			rate = ratelimit.Off
		}
	}
	return ratelimit.Parse(rate)
}

// EmailRate is the sends a second the worker paces e-mail to: the rate of the chain's
// first provider, the one that takes every message while it works (docs/design.md,
// "Pacing"); 0 for the file provider. The later providers of a chain keep their own
// buckets (NewEmail), so a failover is paced to the provider that takes it.
func EmailRate(c Email) (float64, error) {
	switch {
	case c.SES != nil:
		return parseRate("ses", c.SES.Rate, ses.DefaultRate)
	case c.Resend != nil:
		return parseRate("resend", c.Resend.Rate, resend.DefaultRate)
	case c.SMTP != nil:
		return parseRate("smtp", c.SMTP.Rate, ratelimit.Off)
	}
	return 0, nil
}

func parseRate(name, rate, def string) (float64, error) {
	if rate == "" {
		rate = def
	}
	perSecond, err := ratelimit.Parse(rate)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return perSecond, nil
}
