package caddyconf

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/formoutbox/caddy-form-outbox/intake"
)

// parseSpam reads the `spam` block (docs/caddyfile.md, "Spam signals"):
//
//	spam {
//		quarantine_at N                    # score that quarantines (spam_suspected); default 5
//		spam_at N                          # score that files as spam; default 10
//		time_trap MIN [MAX] | off          # signed time trap; default 3s 24h
//	}
func parseSpam(d *caddyfile.Dispenser, existing *intake.Spam) (*intake.Spam, error) {
	if existing != nil {
		return nil, d.Err("spam: only one spam block per form")
	}
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	s := new(intake.Spam)
	var err error
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch opt := d.Val(); opt {
		case "quarantine_at":
			s.QuarantineAt, err = positiveIntLine(d)
		case "spam_at":
			s.SpamAt, err = positiveIntLine(d)
		case "time_trap":
			err = parseTimeTrap(d, s)
		default:
			err = d.Errf("spam: unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	if s.QuarantineAt > 0 && s.SpamAt > 0 && s.SpamAt < s.QuarantineAt {
		return nil, d.Errf("spam: spam_at %d is below quarantine_at %d", s.SpamAt, s.QuarantineAt)
	}
	return s, nil
}

// parseTimeTrap reads `time_trap MIN [MAX]` or `time_trap off`.
func parseTimeTrap(d *caddyfile.Dispenser, s *intake.Spam) error {
	args := d.RemainingArgs()
	if len(args) == 1 && args[0] == "off" {
		s.TimeTrapOff = true
		return nil
	}
	if len(args) < 1 || len(args) > 2 {
		return d.ArgErr()
	}
	for i, a := range args {
		dur, err := caddy.ParseDuration(a)
		if err != nil || dur <= 0 {
			return d.Errf("time_trap: %q is not a positive duration like 3s, or off", a)
		}
		if i == 0 {
			s.TimeTrapMin = intake.Duration(dur)
		} else {
			s.TimeTrapMax = intake.Duration(dur)
		}
	}
	if s.TimeTrapMax > 0 && s.TimeTrapMax <= s.TimeTrapMin {
		return d.Errf("time_trap: the maximum %s must be above the minimum %s", args[1], args[0])
	}
	return nil
}

// parseAltcha reads the `altcha` block (docs/caddyfile.md, "Spam signals"):
//
//	altcha {
//		max_number N                       # difficulty; default 100000
//		expires DURATION                   # how long a challenge holds; default 1h
//		required                           # no valid solution: spam/altcha_failed
//	}
func parseAltcha(d *caddyfile.Dispenser, existing *intake.Altcha) (*intake.Altcha, error) {
	if existing != nil {
		return nil, d.Err("altcha: only one altcha block per form")
	}
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	a := new(intake.Altcha)
	var err error
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch opt := d.Val(); opt {
		case "max_number":
			a.MaxNumber, err = positiveIntLine(d)
		case "expires":
			var dur caddy.Duration
			if dur, err = durationArg(d); err == nil {
				a.Expires = intake.Duration(dur)
			}
		case "required":
			if d.NextArg() {
				err = d.ArgErr()
			}
			a.Required = true
		default:
			err = d.Errf("altcha: unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	return a, nil
}
