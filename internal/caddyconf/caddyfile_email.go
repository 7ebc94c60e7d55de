package caddyconf

import (
	"net/mail"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/providers/ratelimit"
	"github.com/formoutbox/caddy-form-outbox/providers/smtp"
	"github.com/formoutbox/caddy-form-outbox/providers/webhook"
)

// parseEmail reads the global `email` block:
//
//	email {
//		from ADDRESS                       # "Name <addr@example.com>" or a bare address;
//		                                   # required with ses, resend or smtp
//		ses {                              # Amazon SES v2
//			region REGION                  # default: AWS_REGION / shared config
//			configuration_set NAME
//			access_key_id ID               # both keys, or neither: the default AWS chain
//			secret_access_key KEY          # {env.AWS_SECRET_ACCESS_KEY}
//			endpoint URL                   # emulators and tests
//			timeout DURATION               # one send; default 30s
//			rate N/s|N/m|off               # send pace; default 14/s (SES's default quota)
//		}
//		resend {                           # Resend; with ses too, the failover after SES
//			api_key KEY                    # {env.RESEND_API_KEY}
//			endpoint URL                   # tests
//			timeout DURATION
//			rate N/s|N/m|off               # send pace; default 2/s (Resend's API limit)
//		}
//		smtp {                             # an SMTP relay; after ses and resend when combined
//			address HOST:PORT              # required, e.g. smtp.example.com:587
//			username USER                  # AUTH PLAIN; both or neither
//			password PASSWORD              # {env.SMTP_PASSWORD}
//			tls starttls|implicit|none     # default starttls; none only to loopback
//			server_name NAME               # the certificate's name; default the host
//			ca_file PATH                   # PEM CAs to trust instead of the system's
//			helo NAME                      # default this machine's host name
//			timeout DURATION               # one send; default 30s
//			rate N/s|N/m|off               # send pace; default off (unlimited)
//		}
//		file DIR                           # development: write .eml files into DIR
//	}
//
// Secrets accept placeholders, resolved at provision and never written back to the
// config, so `caddy adapt` shows the placeholder and not the key.
func parseEmail(d *caddyfile.Dispenser) (*EmailConfig, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	ec := new(EmailConfig)
	// provider is the first ses, resend or smtp token, kept so that a missing from (known
	// only at the end of the block) is reported at the line that needs it.
	var provider *caddyfile.Dispenser
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch opt := d.Val(); opt {
		case "ses", "resend", "smtp":
			if provider == nil {
				provider = caddyfile.NewDispenser([]caddyfile.Token{d.Token()})
				provider.Next()
			}
		}
		switch opt := d.Val(); opt {
		case "from":
			var from string
			if from, err = singleArg(d); err != nil {
				return nil, err
			}
			if !isPlaceholder(from) {
				if _, perr := mail.ParseAddress(from); perr != nil {
					return nil, d.Errf("email from: %q is not an email address: %v", from, perr)
				}
			}
			ec.From = from
		case "file":
			var dir string
			dir, err = singleArg(d)
			ec.File = &FileConfig{Dir: dir}
		case "ses":
			ec.SES, err = parseSES(d)
		case "resend":
			ec.Resend, err = parseResend(d)
		case "smtp":
			ec.SMTP, err = parseSMTP(d)
		default:
			err = d.Errf("email: unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	if ec.File != nil && (ec.SES != nil || ec.Resend != nil || ec.SMTP != nil) {
		return nil, d.Errf("email: file is for development and cannot be combined with ses, resend or smtp")
	}
	if provider != nil && ec.From == "" {
		return nil, provider.Errf("email %s: %s", provider.Val(), ErrFromRequired)
	}
	return ec, nil
}

func parseSES(d *caddyfile.Dispenser) (*SESConfig, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	c := new(SESConfig)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch opt := d.Val(); opt {
		case "region":
			c.Region, err = singleArg(d)
		case "configuration_set":
			c.ConfigurationSet, err = singleArg(d)
		case "access_key_id":
			c.AccessKeyID, err = singleArg(d)
		case "secret_access_key":
			c.SecretAccessKey, err = singleArg(d)
		case "endpoint":
			c.Endpoint, err = endpointArg(d)
		case "timeout":
			c.Timeout, err = durationArg(d)
		case "rate":
			c.Rate, err = rateArg(d)
		default:
			err = d.Errf("email ses: unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return nil, d.Errf("email ses: access_key_id and secret_access_key go together (or leave both out for the default AWS credential chain)")
	}
	return c, nil
}

func parseResend(d *caddyfile.Dispenser) (*ResendConfig, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	c := new(ResendConfig)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch opt := d.Val(); opt {
		case "api_key":
			c.APIKey, err = singleArg(d)
		case "endpoint":
			c.Endpoint, err = endpointArg(d)
		case "timeout":
			c.Timeout, err = durationArg(d)
		case "rate":
			c.Rate, err = rateArg(d)
		default:
			err = d.Errf("email resend: unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	if c.APIKey == "" {
		return nil, d.Errf("email resend: api_key is required (e.g. api_key {env.RESEND_API_KEY})")
	}
	return c, nil
}

func parseSMTP(d *caddyfile.Dispenser) (*SMTPConfig, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	c := new(SMTPConfig)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch opt := d.Val(); opt {
		case "address":
			c.Address, err = singleArg(d)
		case "username":
			c.Username, err = singleArg(d)
		case "password":
			c.Password, err = singleArg(d)
		case "tls":
			c.TLS, err = singleArg(d)
			if err == nil {
				if terr := smtp.CheckTLS(c.TLS); terr != nil {
					err = d.Errf("email smtp: %v", terr)
				}
			}
		case "server_name":
			c.ServerName, err = singleArg(d)
		case "ca_file":
			c.CAFile, err = singleArg(d)
		case "helo":
			c.HELO, err = singleArg(d)
		case "timeout":
			c.Timeout, err = durationArg(d)
		case "rate":
			c.Rate, err = rateArg(d)
		default:
			err = d.Errf("email smtp: unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	if c.Address == "" {
		return nil, d.Errf("email smtp: address is required (e.g. address smtp.example.com:587)")
	}
	if !isPlaceholder(c.Address) {
		if err := smtp.CheckAddress(c.Address, c.TLS); err != nil {
			return nil, d.Errf("email smtp: %v", err)
		}
	}
	if (c.Username == "") != (c.Password == "") {
		return nil, d.Errf("email smtp: username and password go together (password {env.SMTP_PASSWORD})")
	}
	return c, nil
}

// rateArg reads a send rate (N/s, N/m or off), checked here so that a typo is reported at
// its line rather than at provision.
func rateArg(d *caddyfile.Dispenser) (string, error) {
	s, err := singleArg(d)
	if err != nil {
		return "", err
	}
	if _, err := ratelimit.Parse(s); err != nil {
		return "", d.Errf("%v", err)
	}
	return s, nil
}

// endpointArg reads an http(s) URL, or a placeholder resolved at provision.
func endpointArg(d *caddyfile.Dispenser) (string, error) {
	opt := d.Val()
	s, err := singleArg(d)
	if err != nil {
		return "", err
	}
	if !isPlaceholder(s) {
		if err := intake.CheckHTTPURL(s); err != nil {
			return "", d.Errf("%s: %v", opt, err)
		}
	}
	return s, nil
}

func isPlaceholder(s string) bool { return strings.Contains(s, "{") }

// parseWebhookHeader reads `header NAME VALUE` inside `notify webhook URL { }`.
func parseWebhookHeader(d *caddyfile.Dispenser, r *intake.Route) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	name := d.Val()
	if !d.NextArg() {
		return d.ArgErr()
	}
	value := d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	if err := webhook.CheckHeader(name, value); err != nil {
		return d.Errf("notify webhook: %v", err)
	}
	if r.Headers == nil {
		r.Headers = map[string]string{}
	}
	for k := range r.Headers {
		if strings.EqualFold(k, name) { // header names ignore case
			return d.Errf("notify webhook: header %s given twice", name)
		}
	}
	r.Headers[name] = value
	return nil
}
