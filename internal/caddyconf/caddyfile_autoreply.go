package caddyconf

import (
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/formoutbox/caddy-form-outbox/intake"
)

// parseAutoreply reads a form's autoreply block (docs/caddyfile.md, "Autoreply"):
//
//	autoreply {
//		from "Example Ltd <hello@example.com>"
//		subject "We got your message"
//		body_text autoreply.txt
//		body_html autoreply.html
//		window 24h
//		max_attempts 5
//	}
//
// Each error names the line it is about; intake.Config.Provision checks the whole again
// (and parses the templates) for JSON configs.
func parseAutoreply(d *caddyfile.Dispenser, existing *intake.Autoreply) (*intake.Autoreply, error) {
	if existing != nil {
		return nil, d.Errf("autoreply: given twice in one form")
	}
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	a := &intake.Autoreply{}
	start := caddyfile.NewDispenser([]caddyfile.Token{d.Token()})
	start.Next()
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch opt := d.Val(); opt {
		case "from":
			if a.From, err = singleArg(d); err == nil {
				if serr := intake.CheckSender(a.From); serr != nil {
					err = d.Errf("autoreply: from %q: %v", a.From, serr)
				}
			}
		case "subject":
			a.Subject, err = singleArg(d)
		case "body_text":
			a.BodyText, err = singleArg(d)
		case "body_html":
			a.BodyHTML, err = singleArg(d)
		case "window":
			var w time.Duration
			if w, err = durationLine(d); err == nil {
				if w < time.Minute {
					err = d.Errf("autoreply: window %s: want at least 1m", w)
				}
				a.Window = intake.Duration(w)
			}
		case "max_attempts":
			a.MaxAttempts, err = positiveIntLine(d)
		default:
			err = d.Errf("autoreply: unknown option %q (want from, subject, body_text, body_html, window or max_attempts)", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case a.From == "":
		return nil, start.Errf("autoreply: from is required")
	case a.Subject == "":
		return nil, start.Errf("autoreply: subject is required")
	case a.BodyText == "":
		return nil, start.Errf("autoreply: body_text is required (the plain-text part every reply has)")
	}
	return a, nil
}

// durationLine reads `OPTION DURATION` as durationArg does, as a time.Duration.
func durationLine(d *caddyfile.Dispenser) (time.Duration, error) {
	v, err := durationArg(d)
	return time.Duration(v), err
}
