package caddyconf

import (
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/internal/senders"
)

// EmailConfig is the JSON twin of the `email { ... }` block.
type EmailConfig struct {
	// From is the verified sender of every email; visitors only ever reach Reply-To.
	From string `json:"from,omitempty"`
	// File writes each email as an .eml file (development). It is also what runs when no
	// provider is configured, into <data dir>/form_outbox/mail.
	File *FileConfig `json:"file,omitempty"`
	// SES, Resend and SMTP send real email (internal/senders/email.go); with several, they
	// are tried in that order, and the next takes over within the same attempt when one
	// fails in a way another can help with.
	SES    *SESConfig    `json:"ses,omitempty"`
	Resend *ResendConfig `json:"resend,omitempty"`
	SMTP   *SMTPConfig   `json:"smtp,omitempty"`
}

// FileConfig configures the development email provider.
type FileConfig struct {
	Dir string `json:"dir,omitempty"`
}

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

// Resolved is the email config as internal/senders builds providers from it, each value
// passed through resolve (which replaces placeholders) and trimmed. Secrets go only into
// the result, never back into ec: the running config and `caddy adapt` show only what the
// user wrote. ec may be nil (no email block).
func (ec *EmailConfig) Resolved(from, mailDir string, resolve func(string) string) senders.Email {
	r := func(s string) string { return strings.TrimSpace(resolve(s)) }
	cfg := senders.Email{From: from, MailDir: mailDir}
	if ec == nil {
		return cfg
	}
	cfg.File = ec.File != nil
	if c := ec.SES; c != nil {
		cfg.SES = &senders.SES{Region: r(c.Region), ConfigurationSet: r(c.ConfigurationSet),
			AccessKeyID: r(c.AccessKeyID), SecretAccessKey: r(c.SecretAccessKey),
			Endpoint: r(c.Endpoint), Timeout: time.Duration(c.Timeout), Rate: c.Rate}
	}
	if c := ec.Resend; c != nil {
		cfg.Resend = &senders.Resend{APIKey: r(c.APIKey), Endpoint: r(c.Endpoint),
			Timeout: time.Duration(c.Timeout), Rate: c.Rate}
	}
	if c := ec.SMTP; c != nil {
		cfg.SMTP = &senders.SMTP{Address: r(c.Address), Username: r(c.Username),
			Password: r(c.Password), TLS: r(c.TLS), ServerName: r(c.ServerName),
			HELO: r(c.HELO), CAFile: r(c.CAFile), Timeout: time.Duration(c.Timeout), Rate: c.Rate}
	}
	return cfg
}
