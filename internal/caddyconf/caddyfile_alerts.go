package caddyconf

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// parseAlerts reads the alerts block of the global options (docs/operations.md,
// "Alerts"):
//
//	alerts {
//		email ADDRESS...                     # through the configured e-mail providers
//		notify telegram|slack|discord|teams TARGET [{ ... }]   # as a form's chat routes
//		notify webhook URL [{ secret ...; header ... }]        # signed like a form's webhook
//		interval DURATION                    # how often conditions are checked (30s)
//		renotify DURATION                    # "still happening" at most once per (4h)
//		store_unreachable DURATION           # the store failing this long is an alert (5m)
//		spool_backlog DURATION               # a spooled entry this old is an alert (15m)
//		feedback_rate PERCENT [WINDOW [MIN]] # bounces+complaints over sent e-mail (5% 24h 20)
//	}
//	alerts off                               # no evaluation at all
//
// A notify line takes the options of a form's route of that channel except the ones
// about submissions (when, fallback, subject, templates, digest, attach, content, text).
func parseAlerts(d *caddyfile.Dispenser) (*AlertsConfig, error) {
	ac := &AlertsConfig{}
	if d.NextArg() {
		if d.Val() != "off" || d.NextArg() {
			return nil, d.Errf("alerts: want a block, or `alerts off`")
		}
		if d.NextBlock(d.Nesting()) {
			return nil, d.Err("alerts off takes no block")
		}
		ac.Disabled = true
		return ac, nil
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch opt := d.Val(); opt {
		case "email":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return nil, d.Errf("alerts: email: missing address")
			}
			for _, a := range args {
				if err := intake.CheckRecipient(a); err != nil {
					return nil, d.Errf("alerts: email: %v", err)
				}
			}
			ac.Email = append(ac.Email, args...)
		case "notify":
			var r intake.Route
			file, line := d.File(), d.Line()
			if r, err = parseNotify(d); err == nil {
				if msg := alertRoute(r); msg != "" {
					err = fmt.Errorf("alerts: %s, at %s:%d", msg, file, line)
				}
			}
			ac.Notify = append(ac.Notify, r)
		case "interval":
			ac.Interval, err = durationArg(d)
		case "renotify":
			ac.Renotify, err = durationArg(d)
		case "store_unreachable":
			ac.StoreUnreachable, err = durationArg(d)
		case "spool_backlog":
			ac.SpoolBacklog, err = durationArg(d)
		case "feedback_rate":
			err = parseFeedbackRate(d, ac)
		default:
			err = d.Errf("alerts: unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	return ac, nil
}

// alertRoute says what a form's route has and an alert target cannot use ("" when
// nothing): an alert is not a submission, so it has no fields to guard on or template.
func alertRoute(r intake.Route) string {
	switch {
	case r.Channel == outbox.ChannelEmail:
		return "use `email ADDRESS...` for e-mail targets"
	case len(r.When) > 0 || r.Fallback:
		return "notify " + string(r.Channel) + ": an alert target takes no when or fallback"
	case r.Text != "":
		return "notify " + string(r.Channel) + ": an alert target takes no text template"
	}
	return ""
}

// parseFeedbackRate reads `feedback_rate PERCENT [WINDOW [MIN]]`, PERCENT like 5 or 5%.
func parseFeedbackRate(d *caddyfile.Dispenser, ac *AlertsConfig) error {
	args := d.RemainingArgs()
	if len(args) == 0 || len(args) > 3 {
		return d.ArgErr()
	}
	rate, err := strconv.ParseFloat(strings.TrimSuffix(args[0], "%"), 64)
	if err != nil || rate <= 0 || rate > 100 {
		return d.Errf("alerts: feedback_rate %q is not a percentage like 5%%", args[0])
	}
	ac.FeedbackRate = rate
	if len(args) > 1 {
		w, err := caddy.ParseDuration(args[1])
		if err != nil || w <= 0 {
			return d.Errf("alerts: feedback_rate window %q is not a positive duration like 24h", args[1])
		}
		ac.FeedbackWindow = caddy.Duration(w)
	}
	if len(args) > 2 {
		n, err := strconv.Atoi(args[2])
		if err != nil || n <= 0 {
			return d.Errf("alerts: feedback_rate minimum %q is not a positive whole number", args[2])
		}
		ac.FeedbackMin = n
	}
	return nil
}
