package caddyconf

import (
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/formoutbox/caddy-form-outbox/intake"
)

// unmarshalDefence reads the directive's intake-defence subdirectives; it reports false
// for an option it does not know. The syntax:
//
//	allowed_origins ORIGIN...              # https://example.com; checked on Origin, else Referer
//	rate_limit N WINDOW {                  # N posts per client per WINDOW (e.g. 10 1m)
//		max_clients N                      # clients remembered; default 10000
//		max_stored N                       # rate_limited rows stored per WINDOW; default 100
//	}
//	turnstile|hcaptcha|recaptcha SECRET {  # SECRET may be {env.X}
//		timeout DURATION                   # default 3s; past it: captcha_unavailable
//		endpoint URL                       # siteverify URL override (tests, proxies)
//		hostname NAME...                   # default: the hosts of allowed_origins
//	}
//	client_ip hash|full|off                # how the client address is stored; default hash
//	schema enforce|monitor                 # how the field spec applies (alias: mode)
//	max_unknown_fields N                   # fields beyond the spec kept; default 20
//	max_unknown_length N                   # their length cap; default 2000
//	dedupe DURATION|off                    # double-post window; default 10s
//	spam { quarantine_at N; spam_at N }    # spam signal thresholds; see parseSpam
//	altcha { max_number N; required }      # ALTCHA proof of work; see parseAltcha
func unmarshalDefence(d *caddyfile.Dispenser, h *intake.Config, opt string) (bool, error) {
	var err error
	switch opt {
	case "allowed_origins":
		if !d.NextArg() {
			return true, d.ArgErr()
		}
		for ok := true; ok; ok = d.NextArg() {
			if err := intake.CheckOrigin(d.Val()); err != nil {
				return true, d.Errf("allowed_origins: %v", err)
			}
			h.AllowedOrigins = append(h.AllowedOrigins, d.Val())
		}
	case "rate_limit":
		h.RateLimit, err = parseRateLimit(d)
	case intake.CaptchaTurnstile, intake.CaptchaHCaptcha, intake.CaptchaReCAPTCHA:
		if h.Captcha != nil {
			return true, d.Errf("%s: only one captcha per form", opt)
		}
		h.Captcha, err = parseCaptcha(d, opt)
	case "spam":
		h.Spam, err = parseSpam(d, h.Spam)
	case "altcha":
		h.Altcha, err = parseAltcha(d, h.Altcha)
	case "client_ip":
		h.ClientIPMode, err = oneOfArg(d, intake.ClientIPHash, intake.ClientIPFull, intake.ClientIPOff)
	case "schema":
		h.Mode, err = oneOfArg(d, intake.ModeEnforce, intake.ModeMonitor)
	case "max_unknown_fields":
		h.MaxUnknownFields, err = positiveIntLine(d)
	case "max_unknown_length":
		h.MaxUnknownLength, err = positiveIntLine(d)
	case "dedupe":
		var s string
		if s, err = singleArg(d); err == nil {
			if s == "off" {
				h.DedupeOff = true
			} else if dur, perr := caddy.ParseDuration(s); perr != nil || dur <= 0 {
				err = d.Errf("dedupe: %q is not a positive duration like 10s, or off", s)
			} else {
				h.DedupeWindow = intake.Duration(dur)
			}
		}
	default:
		return false, nil
	}
	return true, err
}

func parseRateLimit(d *caddyfile.Dispenser) (*intake.RateLimit, error) {
	rl := new(intake.RateLimit)
	n, err := positiveIntArg(d)
	if err != nil {
		return nil, err
	}
	rl.Requests = n
	if !d.NextArg() {
		return nil, d.ArgErr()
	}
	window, err := caddy.ParseDuration(d.Val())
	if err != nil || window <= 0 {
		return nil, d.Errf("rate_limit: window %q is not a positive duration like 1m", d.Val())
	}
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	rl.Window = intake.Duration(window)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch opt := d.Val(); opt {
		case "max_clients":
			rl.MaxClients, err = positiveIntLine(d)
		case "max_stored":
			rl.MaxStored, err = positiveIntLine(d)
		default:
			err = d.Errf("rate_limit: unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	return rl, nil
}

func parseCaptcha(d *caddyfile.Dispenser, provider string) (*intake.Captcha, error) {
	secret, err := singleArg(d)
	if err != nil {
		return nil, err
	}
	cc := &intake.Captcha{Provider: provider, Secret: secret}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch opt := d.Val(); opt {
		case "timeout":
			var t caddy.Duration
			t, err = durationArg(d)
			cc.Timeout = intake.Duration(t)
		case "endpoint":
			cc.Endpoint, err = singleArg(d)
			if err == nil {
				if cerr := intake.CheckHTTPURL(cc.Endpoint); cerr != nil {
					err = d.Errf("%s endpoint: %v", provider, cerr)
				}
			}
		case "hostname":
			if !d.NextArg() {
				return nil, d.ArgErr()
			}
			for ok := true; ok; ok = d.NextArg() {
				cc.Hostnames = append(cc.Hostnames, strings.ToLower(d.Val()))
			}
		default:
			err = d.Errf("%s: unknown option %q", provider, opt)
		}
		if err != nil {
			return nil, err
		}
	}
	return cc, nil
}

// parseFieldCheck reads one of the value checks of a `field` line (url, number,
// one_of A|B|C, min_length N, pattern REGEX); it reports false for an unknown option.
func parseFieldCheck(d *caddyfile.Dispenser, f *intake.FieldSpec, opt string) (bool, error) {
	switch opt {
	case "url":
		f.URL = true
	case "number":
		f.Number = true
	case "min_length":
		n, err := positiveIntArg(d)
		f.MinLength = n
		return true, err
	case "one_of":
		if !d.NextArg() {
			return true, d.ArgErr()
		}
		f.OneOf = strings.Split(d.Val(), "|")
	case "pattern":
		if !d.NextArg() {
			return true, d.ArgErr()
		}
		f.Pattern = d.Val()
	default:
		return false, nil
	}
	return true, nil
}

// oneOfArg reads the line's single argument, which must be one of want.
func oneOfArg(d *caddyfile.Dispenser, want ...string) (string, error) {
	opt := d.Val()
	s, err := singleArg(d)
	if err != nil {
		return "", err
	}
	for _, w := range want {
		if s == w {
			return s, nil
		}
	}
	return "", d.Errf("%s: want %s, got %s", opt, strings.Join(want, " or "), strconv.Quote(s))
}
