package caddyconf

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// parseChatNotify reads the chat channels' `notify` lines (the channel name is the
// current token):
//
//	notify telegram CHAT_ID {
//		token SECRET                       # the bot token; use a placeholder like {env.TELEGRAM_TOKEN}
//		endpoint URL                       # default https://api.telegram.org
//		text FILE                          # a Go text/template in the target's markup; values escaped
//		rate N/s|N/m|off                   # send pace to this chat; default 1/s (the bot: 30/s)
//		(when, fallback: see parseRouteOption)
//	}
//	notify slack|discord|teams URL {       # the incoming webhook / workflow URL, a credential: {env.X}
//		text FILE
//		rate N/s|N/m|off                   # send pace to this URL; default slack 1/s, discord 2/s, teams 1/s
//		(when, fallback: see parseRouteOption)
//	}
func parseChatNotify(d *caddyfile.Dispenser, ch outbox.Channel) (intake.Route, error) {
	r := intake.Route{Channel: ch}
	if !d.NextArg() {
		if ch == outbox.ChannelTelegram {
			return r, d.Errf("notify telegram: missing chat id")
		}
		return r, d.Errf("notify %s: missing webhook URL", ch)
	}
	if ch == outbox.ChannelTelegram {
		// Checked here as well as at provision, so that the error names this line.
		if err := intake.CheckTelegramChatID(d.Val()); err != nil {
			return r, d.Errf("notify %v", err)
		}
		r.ChatID = d.Val()
	} else {
		// The URL is the credential, so the error does not repeat it. A placeholder
		// ({env.SLACK_URL}, secrets.go) is checked once resolved, at provision.
		if !hasPlaceholder(d.Val()) && intake.CheckHTTPURL(d.Val()) != nil {
			return r, d.Errf("notify %s: the webhook URL is not an absolute http(s) URL", ch)
		}
		r.URL = d.Val()
	}
	if d.NextArg() {
		return r, d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		var err error
		switch {
		case ch == outbox.ChannelTelegram && opt == "token":
			r.Token, err = singleArg(d)
		case ch == outbox.ChannelTelegram && opt == "endpoint":
			if r.Endpoint, err = singleArg(d); err == nil && intake.CheckHTTPURL(r.Endpoint) != nil {
				err = d.Errf("notify telegram: endpoint %q is not an absolute http(s) URL", r.Endpoint)
			}
		case opt == "text":
			r.Text, err = singleArg(d)
		case opt == "rate":
			r.Rate, err = rateArg(d)
		default:
			var ok bool
			if ok, err = parseRouteOption(d, &r); !ok {
				err = d.Errf("notify %s: unknown option %q", ch, opt)
			}
		}
		if err != nil {
			return r, err
		}
	}
	if ch == outbox.ChannelTelegram && r.Token == "" {
		return r, d.Errf("notify telegram %s: add `token SECRET` (the bot's token)", r.ChatID)
	}
	return r, nil
}

// parseRouteOption reads the options every `notify` block takes, and reports whether
// the current token was one of them:
//
//	when field NAME is VALUE              # all `when` lines of a route must hold
//	when field NAME in VALUE...
//	when field NAME matches REGEX         # Go (RE2) syntax, e.g. (?i)urgent
//	fallback                              # only what no other route matched; no `when`
//
// Guards are checked here, as well as at provision, so an error names the line.
func parseRouteOption(d *caddyfile.Dispenser, r *intake.Route) (bool, error) {
	switch d.Val() {
	case "when":
		args := d.RemainingArgs()
		if len(args) < 4 || args[0] != "field" {
			return true, d.Errf("when: want `when field NAME is VALUE`, `when field NAME in VALUE...` or `when field NAME matches REGEX`")
		}
		r.When = append(r.When, intake.Guard{Field: args[1], Op: args[2], Values: args[3:]})
	case "fallback":
		if d.NextArg() {
			return true, d.ArgErr()
		}
		r.Fallback = true
	default:
		return false, nil
	}
	if err := r.CheckGuards(); err != nil {
		return true, d.Err(err.Error())
	}
	return true, nil
}
