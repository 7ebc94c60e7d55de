package caddyconf

import (
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// ParkConfig is the JSON twin of the `park { ... }` block (docs/operations.md, "Parked
// destinations"). Zero values mean the defaults of outbox.ParkPolicy.
type ParkConfig struct {
	// Off disables automatic parking; operators can still park by hand.
	Off bool `json:"off,omitempty"`
	// After is the number of consecutive failures that parks a destination. Default 5.
	After int `json:"after,omitempty"`
	// Ratio of failures among at least MinSamples outcomes within Window parks too.
	// Defaults 0.8, 20, 10m.
	Ratio      float64        `json:"ratio,omitempty"`
	Window     caddy.Duration `json:"window,omitempty"`
	MinSamples int            `json:"min_samples,omitempty"`
	// ProbeFirst is the wait before the first probe, doubled after each failed one up
	// to ProbeMax. Defaults 1m and 1h.
	ProbeFirst caddy.Duration `json:"probe_first,omitempty"`
	ProbeMax   caddy.Duration `json:"probe_max,omitempty"`
	// Refresh bounds how stale an instance's copy of the parked set gets. Default 5s.
	Refresh caddy.Duration `json:"refresh,omitempty"`
}

// Policy is the outbox's parking policy for c (nil: the defaults), e-mail named email.
func (c *ParkConfig) Policy(email string) outbox.ParkPolicy {
	p := outbox.ParkPolicy{Email: email}
	if c == nil {
		return p
	}
	p.Off, p.After, p.Ratio, p.MinSamples = c.Off, c.After, c.Ratio, c.MinSamples
	p.Window, p.ProbeFirst = time.Duration(c.Window), time.Duration(c.ProbeFirst)
	p.ProbeMax, p.Refresh = time.Duration(c.ProbeMax), time.Duration(c.Refresh)
	return p
}

// parsePark reads the global option's park block:
//
//	park off
//	park {
//		after N                # consecutive failures that park a destination; default 5
//		ratio R                # a failure ratio (0 < R <= 1) that parks ...; default 0.8
//		window DURATION        # ... over this window; default 10m
//		min_samples N          # ... once it holds this many outcomes; default 20
//		probe_first DURATION   # wait before the first probe; default 1m
//		probe_max DURATION     # each failed probe doubles the wait up to this; default 1h
//		refresh DURATION       # how stale an instance's parked set may get; default 5s
//	}
//
// A permanent destination failure (a webhook's 404 or 410, a removed bot, a revoked
// key) parks at once whatever the numbers.
func parsePark(d *caddyfile.Dispenser) (*ParkConfig, error) {
	pc := new(ParkConfig)
	if d.NextArg() {
		if d.Val() != "off" || d.NextArg() {
			return nil, d.Errf("park: want `park off` or a block")
		}
		pc.Off = true
		return pc, nil
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch opt := d.Val(); opt {
		case "after":
			pc.After, err = positiveIntLine(d)
		case "ratio":
			pc.Ratio, err = ratioLine(d)
		case "window":
			pc.Window, err = durationArg(d)
		case "min_samples":
			pc.MinSamples, err = positiveIntLine(d)
		case "probe_first":
			pc.ProbeFirst, err = durationArg(d)
		case "probe_max":
			pc.ProbeMax, err = durationArg(d)
		case "refresh":
			pc.Refresh, err = durationArg(d)
		default:
			err = d.Errf("park: unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	if pc.ProbeFirst > 0 && pc.ProbeMax > 0 && pc.ProbeMax < pc.ProbeFirst {
		return nil, d.Errf("park: probe_max %s is shorter than probe_first %s", time.Duration(pc.ProbeMax), time.Duration(pc.ProbeFirst))
	}
	return pc, nil
}

// ratioLine reads `ratio R` with 0 < R <= 1.
func ratioLine(d *caddyfile.Dispenser) (float64, error) {
	s, err := singleArg(d)
	if err != nil {
		return 0, err
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || r <= 0 || r > 1 {
		return 0, d.Errf("ratio: %q is not a number above 0 and at most 1, like 0.8", s)
	}
	return r, nil
}
