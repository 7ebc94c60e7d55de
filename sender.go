package formoutbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/senders"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
)

// SESConfig is the JSON twin of `email { ses { ... } }`. Every value accepts
// placeholders such as {env.AWS_SECRET_ACCESS_KEY}, resolved at provision.
type SESConfig struct {
	// Region, e.g. eu-west-1. Default: the AWS default chain's (AWS_REGION, ~/.aws/config).
	Region string `json:"region,omitempty"`
	// ConfigurationSet is sent with every email when set.
	ConfigurationSet string `json:"configuration_set,omitempty"`
	// AccessKeyID and SecretAccessKey are explicit credentials; without them the default
	// AWS credential chain is used (environment, shared files, instance or task role).
	AccessKeyID     string `json:"access_key_id,omitempty"`
	SecretAccessKey string `json:"secret_access_key,omitempty"`
	// Endpoint overrides the SES endpoint (emulators, tests).
	Endpoint string `json:"endpoint,omitempty"`
	// Timeout bounds one send. Default 30s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Rate paces sends: "N/s", "N/m" or "off". Default ses.DefaultRate.
	Rate string `json:"rate,omitempty"`
}

// ResendConfig is the JSON twin of `email { resend { ... } }`.
type ResendConfig struct {
	// APIKey is the re_... key; use a placeholder ({env.RESEND_API_KEY}).
	APIKey string `json:"api_key,omitempty"`
	// Endpoint overrides the API base URL (tests).
	Endpoint string `json:"endpoint,omitempty"`
	// Timeout bounds one send. Default 30s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Rate paces sends: "N/s", "N/m" or "off". Default resend.DefaultRate.
	Rate string `json:"rate,omitempty"`
}

// SMTPConfig is the JSON twin of `email { smtp { ... } }`. Every value accepts
// placeholders, resolved at provision and never written back.
type SMTPConfig struct {
	// Address is the relay's host:port, e.g. smtp.example.com:587. Required.
	Address string `json:"address,omitempty"`
	// Username and Password authenticate with AUTH PLAIN (both or neither); use a
	// placeholder for the password ({env.SMTP_PASSWORD}).
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// TLS is starttls (default: refuse a server without STARTTLS), implicit (TLS from the
	// first byte, port 465) or none (plain text, loopback addresses only).
	TLS string `json:"tls,omitempty"`
	// ServerName is the name the certificate must carry; default the address's host.
	ServerName string `json:"server_name,omitempty"`
	// CAFile is a PEM file of the CAs to trust instead of the system's (a private relay).
	CAFile string `json:"ca_file,omitempty"`
	// HELO is the name sent with EHLO; default this machine's host name.
	HELO string `json:"helo,omitempty"`
	// Timeout bounds one send, connection to the reply after DATA. Default 30s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// Rate paces sends: "N/s", "N/m" or "off". Default off: a relay's limits are its own.
	Rate string `json:"rate,omitempty"`
}

// buildSender wires the providers (internal/senders/sender.go) around the email provider
// this config asks for; the form handlers register webhook secrets and headers and the
// Telegram bots in a.registry (handler.go).
func (a *App) buildSender() (outbox.Sender, error) {
	email, err := a.emailProvider()
	if err != nil {
		return nil, fmt.Errorf("email: %w", err)
	}
	a.emailProviderName = email.Name()
	return senders.New(email, &a.registry, a.feedbackStore, a.fileStore)
}

// emailProvider resolves the placeholders of the email config and builds its provider
// (internal/senders/email.go). Secrets are resolved here, into the provider, and never
// written back to the config: the running config and `caddy adapt` show only what the
// user wrote.
func (a *App) emailProvider() (providers.Provider, error) {
	repl := caddy.NewReplacer()
	resolve := func(s string) string { return strings.TrimSpace(repl.ReplaceKnown(s, "")) }
	cfg := senders.Email{From: a.from, MailDir: a.mailDir}
	if ec := a.Email; ec != nil {
		cfg.File = ec.File != nil
		if c := ec.SES; c != nil {
			cfg.SES = &senders.SES{Region: resolve(c.Region), ConfigurationSet: resolve(c.ConfigurationSet),
				AccessKeyID: resolve(c.AccessKeyID), SecretAccessKey: resolve(c.SecretAccessKey),
				Endpoint: resolve(c.Endpoint), Timeout: time.Duration(c.Timeout), Rate: c.Rate}
		}
		if c := ec.Resend; c != nil {
			cfg.Resend = &senders.Resend{APIKey: resolve(c.APIKey), Endpoint: resolve(c.Endpoint),
				Timeout: time.Duration(c.Timeout), Rate: c.Rate}
		}
		if c := ec.SMTP; c != nil {
			cfg.SMTP = &senders.SMTP{Address: resolve(c.Address), Username: resolve(c.Username),
				Password: resolve(c.Password), TLS: resolve(c.TLS), ServerName: resolve(c.ServerName),
				HELO: resolve(c.HELO), CAFile: resolve(c.CAFile), Timeout: time.Duration(c.Timeout), Rate: c.Rate}
		}
	}
	// a.ctx is a caddy.Context struct: converted to an interface it is never nil, so the
	// check is on the context it embeds (unset when an App is built by hand).
	ctx := context.Context(a.ctx)
	if a.ctx.Context == nil {
		ctx = context.Background()
	}
	return senders.NewEmail(ctx, cfg)
}

// resolveTelegramBots resolves the placeholders of the Telegram routes' tokens and
// endpoints into the routes, before intake checks them; like webhook secrets they are
// never written back to the config the user sees.
func resolveTelegramBots(repl *caddy.Replacer, routes []intake.Route) {
	for i := range routes {
		r := &routes[i]
		r.Token = strings.TrimSpace(repl.ReplaceKnown(r.Token, ""))
		r.Endpoint = strings.TrimSpace(repl.ReplaceKnown(r.Endpoint, ""))
	}
}
