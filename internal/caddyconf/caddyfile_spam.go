package caddyconf

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/formoutbox/caddy-form-outbox/intake"
)

// parseSpam reads the `spam` block (docs/caddyfile.md, "Spam signals"):
//
//	spam {
//		quarantine_at N                    # score that quarantines (spam_suspected); default 5
//		spam_at N                          # score that files as spam; default 10
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
