package formoutbox

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chain"
	"github.com/formoutbox/caddy-form-outbox/providers/file"
	"github.com/formoutbox/caddy-form-outbox/providers/ratelimit"
	"github.com/formoutbox/caddy-form-outbox/providers/resend"
	"github.com/formoutbox/caddy-form-outbox/providers/ses"
	"github.com/formoutbox/caddy-form-outbox/providers/smtp"
	"github.com/formoutbox/caddy-form-outbox/providers/webhook"
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

// buildSender wires the providers: email through SES, Resend and/or SMTP (a failover
// chain in that order when several are configured), or else the file provider (the
// default);
// webhooks signed with the secrets, and carrying the headers, that the form handlers
// register; and the chat channels (sender_chat.go).
func (a *App) buildSender() (outbox.Sender, error) {
	email, err := a.emailProvider()
	if err != nil {
		return nil, fmt.Errorf("email: %w", err)
	}
	a.emailProviderName = email.Name()
	hook := webhook.New(webhook.Config{Secret: a.webhookSecret, Headers: a.webhookHeaders})
	router, err := a.chatRouter(outbox.Router{Email: email, Webhook: hook})
	if err != nil {
		return nil, err
	}
	// Suppressed addresses are refused before any provider is called (feedback.go).
	return outbox.SuppressionGuard{Next: router, List: a.feedbackStore}, nil
}

func (a *App) emailProvider() (providers.Provider, error) {
	ec := a.Email
	if ec == nil || (ec.SES == nil && ec.Resend == nil && ec.SMTP == nil) {
		return file.New(file.Config{Dir: a.mailDir, From: a.from})
	}
	if ec.File != nil {
		return nil, errors.New("file is for development and cannot be combined with ses, resend or smtp")
	}
	// Secrets are resolved here, into the provider, and never written back to the
	// config: the running config and `caddy adapt` show only what the user wrote.
	repl := caddy.NewReplacer()
	resolve := func(s string) string { return strings.TrimSpace(repl.ReplaceKnown(s, "")) }
	var list []providers.Provider
	if c := ec.SES; c != nil {
		// a.ctx is a caddy.Context struct: converted to an interface it is never nil, so
		// the check is on the context it embeds (unset when an App is built by hand).
		ctx := context.Context(a.ctx)
		if a.ctx.Context == nil {
			ctx = context.Background()
		}
		p, err := ses.New(ctx, ses.Config{
			From:             a.from,
			Region:           resolve(c.Region),
			Endpoint:         resolve(c.Endpoint),
			AccessKeyID:      resolve(c.AccessKeyID),
			SecretAccessKey:  resolve(c.SecretAccessKey),
			ConfigurationSet: resolve(c.ConfigurationSet),
			Timeout:          time.Duration(c.Timeout),
		})
		if err != nil {
			return nil, err
		}
		paced, err := paced(p, "ses", c.Rate, ses.DefaultRate)
		if err != nil {
			return nil, err
		}
		list = append(list, paced)
	}
	if c := ec.Resend; c != nil {
		p, err := resend.New(resend.Config{
			From:     a.from,
			APIKey:   resolve(c.APIKey),
			Endpoint: resolve(c.Endpoint),
			Timeout:  time.Duration(c.Timeout),
		})
		if err != nil {
			return nil, err
		}
		paced, err := paced(p, "resend", c.Rate, resend.DefaultRate)
		if err != nil {
			return nil, err
		}
		list = append(list, paced)
	}
	// SMTP comes last, so adding it to a config with SES or Resend changes nothing while
	// they work: it is the relay of last resort.
	if c := ec.SMTP; c != nil {
		p, err := newSMTP(c, a.from, resolve)
		if err != nil {
			return nil, err
		}
		paced, err := paced(p, "smtp", c.Rate, ratelimit.Off)
		if err != nil {
			return nil, err
		}
		list = append(list, paced)
	}
	if len(list) == 1 {
		return list[0], nil
	}
	return chain.New(list...), nil
}

// paced wraps p in its configured send rate (rate, or def when unset), so that a backlog
// drains at the pace the provider accepts rather than into its 429s. Each provider of a
// chain has its own bucket: a failover to Resend is paced by Resend's rate, not SES's.
func paced(p providers.Provider, name, rate, def string) (providers.Provider, error) {
	if rate == "" {
		rate = def
	}
	perSecond, err := ratelimit.Parse(rate)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return ratelimit.Wrap(p, perSecond), nil
}

func newSMTP(c *SMTPConfig, from string, resolve func(string) string) (*smtp.Provider, error) {
	cfg := smtp.Config{
		Address:    resolve(c.Address),
		Username:   resolve(c.Username),
		Password:   resolve(c.Password),
		TLS:        resolve(c.TLS),
		ServerName: resolve(c.ServerName),
		HELO:       resolve(c.HELO),
		Timeout:    time.Duration(c.Timeout),
		From:       from,
	}
	if path := resolve(c.CAFile); path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("smtp ca_file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("smtp ca_file %s: no PEM certificate in it", path)
		}
	}
	return smtp.New(cfg)
}

// registerWebhookHeaders records the extra headers of a webhook URL. Like secrets, two
// forms may notify one URL only with the same headers.
func (a *App) registerWebhookHeaders(url string, headers map[string]string) error {
	a.secretsMu.Lock()
	defer a.secretsMu.Unlock()
	if a.headers == nil {
		a.headers = make(map[string]map[string]string)
	}
	if old, ok := a.headers[url]; ok && !maps.Equal(old, headers) {
		return fmt.Errorf("webhook %s is configured with two different sets of headers", url)
	}
	a.headers[url] = maps.Clone(headers)
	return nil
}

// webhookHeaders is the webhook provider's Headers hook.
func (a *App) webhookHeaders(url string) map[string]string {
	a.secretsMu.RLock()
	defer a.secretsMu.RUnlock()
	return a.headers[url]
}
