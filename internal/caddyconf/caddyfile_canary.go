package caddyconf

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/formoutbox/caddy-form-outbox/intake"
)

// parseCanary reads a `canary` line, in a form's block (perForm) or in the global
// options (docs/caddyfile.md, "canary"):
//
//	canary every DURATION [deadline DURATION]   # at least 5m; deadline default 15m, at most the period
//	canary off                                  # a form only: no canary despite a global default
//
// Without a canary line anywhere no canary runs.
func parseCanary(d *caddyfile.Dispenser, perForm bool) (*intake.Canary, error) {
	args := d.RemainingArgs()
	if len(args) == 1 && args[0] == "off" {
		if !perForm {
			return nil, d.Errf("canary off: only a form turns the canary off; the global default is off when unset")
		}
		return &intake.Canary{Off: true}, nil
	}
	c := &intake.Canary{}
	if len(args) != 2 && len(args) != 4 || args[0] != "every" || len(args) == 4 && args[2] != "deadline" {
		return nil, d.Errf("canary: want `canary every DURATION [deadline DURATION]` or `canary off`")
	}
	for i := 1; i < len(args); i += 2 {
		v, err := caddy.ParseDuration(args[i])
		if err != nil || v <= 0 {
			return nil, d.Errf("canary %s: %q is not a positive duration like 6h or 15m", args[i-1], args[i])
		}
		if i == 1 {
			c.Every = intake.Duration(v)
		} else {
			c.Deadline = intake.Duration(v)
		}
	}
	if err := c.Check(); err != nil {
		return nil, d.Errf("%v", err)
	}
	if d.NextBlock(d.Nesting()) {
		return nil, d.Errf("canary: takes no block")
	}
	return c, nil
}
