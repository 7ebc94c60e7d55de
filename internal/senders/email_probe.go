package senders

import (
	"context"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// NamedProber is one configured e-mail provider, ready to be probed.
type NamedProber struct {
	Name string
	providers.Prober
}

// EmailProbers builds each configured e-mail provider as NewEmail would, but bare (not
// paced, not chained), so that `caddy form-outbox check` asks every one of them: a
// failover chain hides a dead first provider until the day the second fails too. The
// file provider has nothing to ask and is left out.
func EmailProbers(ctx context.Context, c Email) ([]NamedProber, error) {
	var out []NamedProber
	if s := c.SES; s != nil {
		p, err := newSES(ctx, s, c.From)
		if err != nil {
			return nil, err
		}
		out = append(out, NamedProber{"ses", p})
	}
	if r := c.Resend; r != nil {
		p, err := newResend(r, c.From)
		if err != nil {
			return nil, err
		}
		out = append(out, NamedProber{"resend", p})
	}
	if s := c.SMTP; s != nil {
		p, err := newSMTP(s, c.From)
		if err != nil {
			return nil, err
		}
		out = append(out, NamedProber{"smtp", p})
	}
	return out, nil
}
