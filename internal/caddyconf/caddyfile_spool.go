package caddyconf

import "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

// parseSpool reads the spool option of the global block:
//
//	spool DIR             # fallback spool in DIR (default: <data dir>/form_outbox/spool)
//	spool off             # no spool: a store failure answers 503
//	spool always [DIR]    # write-ahead: every submission is fsynced to the spool first
//
// Without the option the fallback spool is on, in the default directory.
func parseSpool(d *caddyfile.Dispenser) (*SpoolConfig, error) {
	args := d.RemainingArgs()
	sc := &SpoolConfig{}
	switch {
	case len(args) == 1 && args[0] == SpoolOff:
		sc.Mode = SpoolOff
	case len(args) >= 1 && len(args) <= 2 && args[0] == SpoolAlways:
		sc.Mode = SpoolAlways
		if len(args) == 2 {
			sc.Dir = args[1]
		}
	case len(args) == 1:
		sc.Dir = args[0]
	default:
		return nil, d.ArgErr()
	}
	if d.NextBlock(d.Nesting()) {
		return nil, d.Err("spool takes no block")
	}
	return sc, nil
}
