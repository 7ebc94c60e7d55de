// Package senders builds the providers a worker delivers through from plain, resolved
// config values: the email provider (file, or SES, Resend and SMTP as a failover chain),
// the webhook and chat providers, and the Sender that routes between them. It knows
// nothing of Caddy: internal/caddyconf/email.go resolves the config's placeholders into
// plain strings, so this wiring tests in seconds.
package senders

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chain"
	"github.com/formoutbox/caddy-form-outbox/providers/file"
	"github.com/formoutbox/caddy-form-outbox/providers/ratelimit"
	"github.com/formoutbox/caddy-form-outbox/providers/resend"
	"github.com/formoutbox/caddy-form-outbox/providers/ses"
	"github.com/formoutbox/caddy-form-outbox/providers/smtp"
)

// Email is the resolved email config: every placeholder already replaced.
type Email struct {
	// From is the verified sender of every email.
	From string
	// MailDir is where the file provider writes .eml files when no real provider is set.
	MailDir string
	// File is true when the file provider was asked for explicitly; it cannot be
	// combined with a real provider.
	File bool
	// SES, Resend and SMTP are the real providers, tried in that order when several are
	// set.
	SES    *SES
	Resend *Resend
	SMTP   *SMTP
}

// SES is the resolved config of the SES provider.
type SES struct {
	Region, ConfigurationSet, AccessKeyID, SecretAccessKey, Endpoint string
	Timeout                                                          time.Duration
	// Rate is "N/s", "N/m" or "off"; "" means ses.DefaultRate.
	Rate string
}

// Resend is the resolved config of the Resend provider.
type Resend struct {
	APIKey, Endpoint string
	Timeout          time.Duration
	// Rate is "N/s", "N/m" or "off"; "" means resend.DefaultRate.
	Rate string
}

// SMTP is the resolved config of the SMTP provider.
type SMTP struct {
	Address, Username, Password, TLS, ServerName, HELO string
	// CAFile is a PEM file of the CAs to trust instead of the system's.
	CAFile  string
	Timeout time.Duration
	// Rate is "N/s", "N/m" or "off"; "" means off, because a relay's limits are its own.
	Rate string
}

// NewEmail builds the email provider: the file provider when no real provider is
// configured, else SES, Resend and SMTP, each paced to its rate, as a failover chain in
// that order. ctx is handed to the AWS SDK, which may use it to load credentials.
func NewEmail(ctx context.Context, c Email) (providers.Provider, error) {
	if c.SES == nil && c.Resend == nil && c.SMTP == nil {
		return file.New(file.Config{Dir: c.MailDir, From: c.From})
	}
	if c.File {
		return nil, errors.New("file is for development and cannot be combined with ses, resend or smtp")
	}
	var list []providers.Provider
	if s := c.SES; s != nil {
		p, err := newSES(ctx, s, c.From)
		if err != nil {
			return nil, err
		}
		if list, err = appendPaced(list, p, "ses", s.Rate, ses.DefaultRate); err != nil {
			return nil, err
		}
	}
	if r := c.Resend; r != nil {
		p, err := newResend(r, c.From)
		if err != nil {
			return nil, err
		}
		if list, err = appendPaced(list, p, "resend", r.Rate, resend.DefaultRate); err != nil {
			return nil, err
		}
	}
	// SMTP comes last, so adding it to a config with SES or Resend changes nothing while
	// they work: it is the relay of last resort.
	if s := c.SMTP; s != nil {
		p, err := newSMTP(s, c.From)
		if err != nil {
			return nil, err
		}
		if list, err = appendPaced(list, p, "smtp", s.Rate, ratelimit.Off); err != nil {
			return nil, err
		}
	}
	if len(list) == 1 {
		return list[0], nil
	}
	return chain.New(list...), nil
}

// appendPaced appends p wrapped in its configured send rate (rate, or def when unset),
// so that a backlog drains at the pace the provider accepts rather than into its 429s.
// Each provider of a chain has its own bucket: a failover to Resend is paced by Resend's
// rate, not SES's.
func appendPaced(list []providers.Provider, p providers.Provider, name, rate, def string) ([]providers.Provider, error) {
	perSecond, err := parseRate(name, rate, def)
	if err != nil {
		return nil, err
	}
	return append(list, ratelimit.Wrap(p, perSecond)), nil
}

func newSES(ctx context.Context, s *SES, from string) (*ses.Provider, error) {
	return ses.New(ctx, ses.Config{
		From:             from,
		Region:           s.Region,
		Endpoint:         s.Endpoint,
		AccessKeyID:      s.AccessKeyID,
		SecretAccessKey:  s.SecretAccessKey,
		ConfigurationSet: s.ConfigurationSet,
		Timeout:          s.Timeout,
	})
}

func newResend(r *Resend, from string) (*resend.Provider, error) {
	return resend.New(resend.Config{From: from, APIKey: r.APIKey, Endpoint: r.Endpoint, Timeout: r.Timeout})
}

func newSMTP(c *SMTP, from string) (*smtp.Provider, error) {
	cfg := smtp.Config{
		Address:    c.Address,
		Username:   c.Username,
		Password:   c.Password,
		TLS:        c.TLS,
		ServerName: c.ServerName,
		HELO:       c.HELO,
		Timeout:    c.Timeout,
		From:       from,
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("smtp ca_file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("smtp ca_file %s: no PEM certificate in it", c.CAFile)
		}
	}
	return smtp.New(cfg)
}
