package caddyconf

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// parseRetention reads the global option's retention line:
//
//	retention DURATION    # e.g. 365d, 720h; "off" or 0 keeps everything (the default)
//
// Submissions older than DURATION whose deliveries are all finished (sent, dead or
// skipped) are pruned hourly with their deliveries, attempts and old events.
func parseRetention(d *caddyfile.Dispenser) (caddy.Duration, error) {
	if !d.NextArg() {
		return 0, d.ArgErr()
	}
	val := d.Val()
	if d.NextArg() {
		return 0, d.ArgErr()
	}
	if val == "off" {
		return 0, nil
	}
	dur, err := caddy.ParseDuration(val)
	if err != nil {
		return 0, d.Errf("retention %q: %v", val, err)
	}
	if dur < 0 {
		return 0, d.Errf("retention %q: must not be negative", val)
	}
	return caddy.Duration(dur), nil
}
