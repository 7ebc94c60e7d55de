package caddyconf

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/dustin/go-humanize"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/digest"
)

// ParseApp reads the global option block into a (the root's App.UnmarshalCaddyfile):
//
//	form_outbox {
//		storage sqlite [PATH]                  # default: <data dir>/form_outbox/outbox.db
//		storage postgres DSN {                 # DSN may be a placeholder: {env.DATABASE_URL}
//			schema NAME                        # optional; default: the DSN's search_path
//		}
//		worker {
//			concurrency N
//			poll_interval DURATION
//			lease DURATION
//			batch N
//			shutdown_grace DURATION
//			notifications on|off
//		}
//		retry {
//			base DURATION
//			max_delay DURATION
//			email_attempts N
//			webhook_attempts N
//		}
//		park off | { ... }                     # see parsePark (caddyfile_park.go)
//		email {                                # see parseEmail (caddyfile_email.go)
//			from ADDRESS
//			ses { ... }
//			resend { ... }
//			file DIR
//		}
//		spool DIR | off | always [DIR]         # see parseSpool
//		backup s3://BUCKET/PREFIX { ... }      # see parseBackup (caddyfile_backup.go)
//		retention DURATION                     # e.g. 365d; see parseRetention
//		inbox_url URL                          # emails link to the submission in the inbox
//		files_url URL [TTL]                    # signed file links in webhooks and chat (form_outbox_files)
//		alerts { ... } | off                   # owner alerts; see parseAlerts
//		canary every DURATION [deadline DURATION] # every form's canary; see parseCanary
//	}
func ParseApp(d *caddyfile.Dispenser, a *App) error {
	d.Next() // the option name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		var err error
		switch d.Val() {
		case "storage":
			a.Storage, err = parseStorage(d)
		case "worker":
			a.Worker, err = parseWorker(d)
		case "retry":
			a.Retry, err = parseRetry(d)
		case "park":
			a.Park, err = parsePark(d)
		case "email":
			a.Email, err = parseEmail(d)
		case "spool":
			a.Spool, err = parseSpool(d)
		case "backup":
			a.Backup, err = parseBackup(d)
		case "retention":
			a.Retention, err = parseRetention(d)
		case "inbox_url":
			a.InboxURL, err = parseInboxURL(d)
		case "files_url":
			err = parseFilesURL(d, a) // files_handler.go
		case "alerts":
			a.Alerts, err = parseAlerts(d) // caddyfile_alerts.go
		case "canary":
			a.Canary, err = parseCanary(d, false)
		default:
			err = d.Errf("unknown option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func parseStorage(d *caddyfile.Dispenser) (*StorageConfig, error) {
	if !d.NextArg() {
		return nil, d.ArgErr()
	}
	sc := &StorageConfig{Driver: d.Val()}
	switch sc.Driver {
	case DriverSQLite:
		if d.NextArg() {
			sc.Path = d.Val()
		}
		if d.NextArg() {
			return nil, d.ArgErr()
		}
	case DriverPostgres:
		if !d.NextArg() {
			return nil, d.Errf("storage postgres: missing DSN")
		}
		sc.DSN = d.Val()
		if d.NextArg() {
			return nil, d.ArgErr()
		}
		for nesting := d.Nesting(); d.NextBlock(nesting); {
			switch d.Val() {
			case "schema":
				var err error
				if sc.Schema, err = singleArg(d); err != nil {
					return nil, err
				}
			default:
				return nil, d.Errf("storage postgres: unknown option %q", d.Val())
			}
		}
	default:
		return nil, d.Errf("storage: unknown driver %q (want sqlite or postgres)", sc.Driver)
	}
	return sc, nil
}

func parseWorker(d *caddyfile.Dispenser) (*WorkerConfig, error) {
	if d.NextArg() {
		// `worker off`: an intake-only instance; nothing else to tune then.
		if d.Val() != "off" || d.NextArg() {
			return nil, d.Errf("worker: want a block or off, got %q", d.Val())
		}
		if d.NextBlock(d.Nesting()) {
			return nil, d.Err("worker off takes no block")
		}
		return &WorkerConfig{Disabled: true}, nil
	}
	wc := new(WorkerConfig)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch opt := d.Val(); opt {
		case "concurrency":
			wc.Concurrency, err = positiveIntLine(d)
		case "batch":
			wc.Batch, err = positiveIntLine(d)
		case "poll_interval":
			wc.PollInterval, err = durationArg(d)
		case "lease":
			wc.Lease, err = durationArg(d)
		case "shutdown_grace":
			wc.ShutdownGrace, err = durationArg(d)
		case "notifications":
			var on bool
			on, err = onOffArg(d)
			wc.Notifications = &on
		default:
			err = d.Errf("worker: unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	return wc, nil
}

func parseRetry(d *caddyfile.Dispenser) (*RetryConfig, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	rc := new(RetryConfig)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch opt := d.Val(); opt {
		case "base":
			rc.Base, err = durationArg(d)
		case "max_delay":
			rc.MaxDelay, err = durationArg(d)
		case "email_attempts":
			rc.EmailAttempts, err = positiveIntLine(d)
		case "webhook_attempts":
			rc.WebhookAttempts, err = positiveIntLine(d)
		default:
			err = d.Errf("retry: unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	return rc, nil
}

// ParseFormDirective reads the `form_outbox` directive into handler and returns its
// matcher set (the root's parseDirective makes the route):
//
//	form_outbox [<matcher>] {
//		form NAME                              # default: the matcher's path, e.g. /contact -> contact
//		field NAME [required] [max_length N] [min_length N] [email] [url] [number] [one_of A|B|C] [pattern REGEX]
//		honeypot NAME                          # default _gotcha
//		redirect URL                           # default: a built-in thank-you page
//		max_body SIZE                          # e.g. 256KB, 1MiB; default 256KiB
//		max_field_length N                     # characters of any one value; default 10000, or the largest max_length
//		schema enforce|monitor                 # default enforce: violations are quarantined; alias: mode
//		(defences: allowed_origins, rate_limit, turnstile|hcaptcha|recaptcha, client_ip,
//		 max_unknown_fields, max_unknown_length, dedupe; see unmarshalDefence)
//		notify email ADDRESS... {
//			subject TEMPLATE                   # {field.NAME} is replaced by that field
//			content full|link                  # link: form, id and inbox link only (needs inbox_url)
//			attach [SIZE]                      # attach uploaded files up to SIZE in all (default 10MiB)
//			body_text FILE                     # a Go text/template (intake.TemplateData); default built in
//			body_html FILE                     # a Go html/template; read and parsed at provision
//			digest hourly|daily at HH:MM [TZ]|weekly WEEKDAY HH:MM [TZ]|every DURATION
//			                                   # one e-mail per period instead of one per submission
//		}
//		notify webhook URL {
//			secret SECRET                      # whsec_...; placeholders like {env.X} allowed
//			header NAME VALUE                  # extra header, repeatable; {env.X} allowed
//			rate N/s|N/m|off                   # send pace to this URL; default off
//		}
//		notify telegram CHAT_ID { token SECRET; endpoint URL; rate R }   # see parseChatNotify
//		notify slack|discord|teams URL { rate R }
//		(every notify block also takes `when field ...` guards and `fallback`; see parseRouteOption)
//		store_only                             # no notify route, deliberately: posts are kept, nobody is told
//		canary every DURATION [deadline DURATION] | off   # see parseCanary
//	}
//
// It is registered with RegisterDirective rather than RegisterHandlerDirective because it
// needs the matcher to name the form.
func ParseFormDirective(h httpcaddyfile.Helper, handler *intake.Config) (caddy.ModuleMap, error) {
	if !h.Next() {
		return nil, h.ArgErr()
	}
	matcherSet, err := h.ExtractMatcherSet()
	if err != nil {
		return nil, err
	}
	if err := ParseForm(h.Dispenser, handler); err != nil {
		return nil, err
	}
	if handler.Form == "" {
		name, ok := formFromMatcher(matcherSet)
		if !ok {
			h.Reset() // point the error at the directive's line, not its closing brace
			h.Next()
			return nil, h.Errf("add `form NAME`: the form name can be derived only from a single-segment path matcher such as /contact")
		}
		handler.Form = name
	}
	return matcherSet, nil
}

// formPathSegment is what a form name derived from a path may look like.
var formPathSegment = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// formFromMatcher returns the form name a matcher set implies: the segment of a single
// literal one-segment path matcher (/contact or /contact/ -> contact) and nothing else,
// since anything wider (wildcards, several paths, other matchers) names no single form.
func formFromMatcher(set caddy.ModuleMap) (string, bool) {
	if len(set) != 1 {
		return "", false
	}
	raw, ok := set["path"]
	if !ok {
		return "", false
	}
	var paths []string
	if err := json.Unmarshal(raw, &paths); err != nil || len(paths) != 1 {
		return "", false
	}
	seg := strings.Trim(paths[0], "/")
	if !formPathSegment.MatchString(seg) || strings.Trim(seg, ".") == "" {
		return "", false
	}
	return seg, true
}

// ParseForm reads the directive's block; see ParseFormDirective for the syntax. The
// matcher token, if any, has already been removed from d.
func ParseForm(d *caddyfile.Dispenser, h *intake.Config) error {
	d.Next() // the directive name
	// The block's own tokens, so that the checks after the block (checkReferences) can
	// go over it again; errors keep their file and line, which tokens carry.
	d = caddyfile.NewDispenser(d.NextSegment())
	d.Next()
	directive := caddyfile.NewDispenser([]caddyfile.Token{d.Token()})
	directive.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	// fieldLines keeps each field's line, so that a clash found later in the block (a
	// second field of one name, a honeypot named like a field) is reported where it is.
	fieldLines := map[string]*caddyfile.Dispenser{}
	for d.NextBlock(0) {
		var err error
		switch opt := d.Val(); opt {
		case "form":
			h.Form, err = singleArg(d)
		case "field":
			line := caddyfile.NewDispenser([]caddyfile.Token{d.Token()})
			line.Next()
			var f intake.FieldSpec
			if f, err = parseField(d); err == nil {
				if fieldLines[f.Name] != nil {
					err = line.Errf("field %q: listed twice", f.Name)
				}
				fieldLines[f.Name] = line
			}
			h.Fields = append(h.Fields, f)
		case "honeypot":
			h.Honeypot, err = singleArg(d)
		case "redirect":
			h.Redirect, err = singleArg(d)
		case "max_body":
			h.MaxBodyBytes, err = sizeArg(d)
		case "max_field_length":
			h.MaxFieldLength, err = positiveIntLine(d)
		case "mode": // the older name of `schema`
			h.Mode, err = oneOfArg(d, intake.ModeEnforce, intake.ModeMonitor)
		case "autoreply":
			h.Autoreply, err = parseAutoreply(d, h.Autoreply)
		case "canary":
			h.Canary, err = parseCanary(d, true)
		case "notify":
			var r intake.Route
			r, err = parseNotify(d)
			h.Routes = append(h.Routes, r)
		case "store_only":
			if d.NextArg() {
				err = d.ArgErr()
			}
			h.StoreOnly = true
		default:
			var ok bool
			if ok, err = unmarshalDefence(d, h, opt); !ok {
				err = d.Errf("unknown subdirective %q", opt)
			}
		}
		if err != nil {
			return err
		}
	}
	honeypot := h.Honeypot
	if honeypot == "" {
		honeypot = intake.DefaultHoneypot
	}
	if line := fieldLines[honeypot]; line != nil {
		return line.Errf("field %q: is the honeypot (name the honeypot otherwise with `honeypot NAME`)", honeypot)
	}
	if err := h.CheckRouted(); err != nil {
		return directive.Err(err.Error())
	}
	return checkReferences(d, h) // caddyfile_references.go
}

func parseField(d *caddyfile.Dispenser) (intake.FieldSpec, error) {
	var f intake.FieldSpec
	if !d.NextArg() {
		return f, d.ArgErr()
	}
	f.Name = d.Val()
	for d.NextArg() {
		switch opt := d.Val(); opt {
		case "file":
			return parseFileField(d, f) // caddyfile_upload.go
		case "required":
			f.Required = true
		case "email":
			f.Email = true
		case "max_length":
			n, err := positiveIntArg(d)
			if err != nil {
				return f, err
			}
			f.MaxLength = n
			continue
		default:
			if ok, err := parseFieldCheck(d, &f, opt); !ok {
				return f, d.Errf("field %s: unknown option %q (want required, max_length N, min_length N, email, url, number, one_of A|B or pattern REGEX)", f.Name, opt)
			} else if err != nil {
				return f, err
			}
		}
	}
	// Checked here and not only at Provision: the JSON config that Caddy provisions has
	// no Caddyfile lines left to name.
	if err := f.Check(); err != nil {
		return f, d.Err(err.Error())
	}
	return f, nil
}

func parseNotify(d *caddyfile.Dispenser) (intake.Route, error) {
	var r intake.Route
	var err error
	if !d.NextArg() {
		return r, d.ArgErr()
	}
	switch ch := d.Val(); ch {
	case string(outbox.ChannelEmail):
		r.Channel = outbox.ChannelEmail
		for d.NextArg() {
			addr := d.Val()
			if err := intake.CheckRecipient(addr); err != nil {
				return r, d.Errf("notify email: %v", err)
			}
			r.To = append(r.To, addr)
		}
		if len(r.To) == 0 {
			return r, d.Errf("notify email: missing recipient address")
		}
		for nesting := d.Nesting(); d.NextBlock(nesting); {
			switch opt := d.Val(); opt {
			case "subject":
				s, err := singleArg(d)
				if err != nil {
					return r, err
				}
				r.Subject = s
			case "content":
				s, err := singleArg(d)
				if err != nil {
					return r, err
				}
				if s != intake.ContentFull && s != intake.ContentLink {
					return r, d.Errf("notify email: content %q: want full or link", s)
				}
				r.Content = s
			case "attach":
				r.Attach = true
				if d.NextArg() {
					n, err := humanize.ParseBytes(d.Val())
					if err != nil || n == 0 || n > 1<<40 {
						return r, d.Errf("notify email: attach %q is not a size like 10MB", d.Val())
					}
					r.AttachMax = int64(n)
				}
				if d.NextArg() {
					return r, d.ArgErr()
				}
			case "body_text":
				if r.BodyText, err = singleArg(d); err != nil {
					return r, err
				}
			case "body_html":
				if r.BodyHTML, err = singleArg(d); err != nil {
					return r, err
				}
			case "digest":
				if r.Digest, err = digestArgs(d); err != nil {
					return r, err
				}
			default:
				if ok, err := parseRouteOption(d, &r); !ok {
					return r, d.Errf("notify email: unknown option %q", opt)
				} else if err != nil {
					return r, err
				}
			}
		}
	case string(outbox.ChannelWebhook):
		r.Channel = outbox.ChannelWebhook
		if !d.NextArg() {
			return r, d.Errf("notify webhook: missing URL")
		}
		if err := intake.CheckHTTPURL(d.Val()); err != nil {
			return r, d.Errf("notify webhook: %v", err)
		}
		r.URL = d.Val()
		if d.NextArg() {
			return r, d.ArgErr()
		}
		for nesting := d.Nesting(); d.NextBlock(nesting); {
			switch opt := d.Val(); opt {
			case "secret":
				s, err := singleArg(d)
				if err != nil {
					return r, err
				}
				r.Secret = s
			case "header":
				if err := parseWebhookHeader(d, &r); err != nil {
					return r, err
				}
			case "rate":
				rate, err := rateArg(d)
				if err != nil {
					return r, err
				}
				r.Rate = rate
			default:
				if ok, err := parseRouteOption(d, &r); !ok {
					return r, d.Errf("notify webhook: unknown option %q", opt)
				} else if err != nil {
					return r, err
				}
			}
		}
	case string(outbox.ChannelTelegram), string(outbox.ChannelSlack), string(outbox.ChannelDiscord), string(outbox.ChannelTeams):
		return parseChatNotify(d, outbox.Channel(ch))
	default:
		return r, d.Errf("notify: unknown channel %q (want email, webhook, telegram, slack, discord or teams)", ch)
	}
	return r, nil
}

// digestArgs reads `digest SCHEDULE...` (outbox/digest.Parse), reporting a bad schedule
// at its line.
func digestArgs(d *caddyfile.Dispenser) (string, error) {
	spec := strings.Join(d.RemainingArgs(), " ")
	if _, err := digest.Parse(spec); err != nil {
		return "", d.Errf("notify email: digest: %v", err)
	}
	return spec, nil
}

func singleArg(d *caddyfile.Dispenser) (string, error) {
	if !d.NextArg() {
		return "", d.ArgErr()
	}
	v := d.Val()
	if d.NextArg() {
		return "", d.ArgErr()
	}
	return v, nil
}

// positiveIntLine reads `OPTION N` where N is the line's only argument, an integer > 0.
func positiveIntLine(d *caddyfile.Dispenser) (int, error) {
	n, err := positiveIntArg(d)
	if err != nil {
		return 0, err
	}
	if d.NextArg() {
		return 0, d.ArgErr()
	}
	return n, nil
}

// positiveIntArg reads the next argument of the current line as an integer > 0. It does
// not insist on the end of the line, so `field NAME max_length N` can go on with more
// options.
func positiveIntArg(d *caddyfile.Dispenser) (int, error) {
	opt := d.Val()
	if !d.NextArg() {
		return 0, d.ArgErr()
	}
	n, err := strconv.Atoi(d.Val())
	if err != nil || n <= 0 {
		return 0, d.Errf("%s: %q is not a positive whole number", opt, d.Val())
	}
	return n, nil
}

func durationArg(d *caddyfile.Dispenser) (caddy.Duration, error) {
	opt := d.Val()
	s, err := singleArg(d)
	if err != nil {
		return 0, err
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil || dur <= 0 {
		return 0, d.Errf("%s: %q is not a positive duration like 30s or 6h", opt, s)
	}
	return caddy.Duration(dur), nil
}

func sizeArg(d *caddyfile.Dispenser) (int64, error) {
	opt := d.Val()
	s, err := singleArg(d)
	if err != nil {
		return 0, err
	}
	n, err := humanize.ParseBytes(s)
	if err != nil || n == 0 || n > 1<<40 {
		return 0, d.Errf("%s: %q is not a size like 256KB or 1MiB", opt, s)
	}
	return int64(n), nil
}

func onOffArg(d *caddyfile.Dispenser) (bool, error) {
	opt := d.Val()
	s, err := singleArg(d)
	if err != nil {
		return false, err
	}
	switch s {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, d.Errf("%s: want on or off, got %q", opt, s)
}
