package resend

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
)

// Probe lists the account's domains (a read) and checks that the sender's domain is
// among them and verified: a wrong API key fails the list, and Resend refuses every
// send from an unverified domain.
func (p *Provider) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	list, err := p.client.Domains.ListWithContext(ctx)
	if err != nil {
		return fmt.Errorf("resend: list domains: %w", err)
	}
	addr, err := mail.ParseAddress(p.from)
	if err != nil {
		return fmt.Errorf("resend: from %q: %w", p.from, err)
	}
	_, domain, _ := strings.Cut(addr.Address, "@")
	for _, d := range list.Data {
		if strings.EqualFold(d.Name, domain) {
			if d.Status != "verified" {
				return fmt.Errorf("resend: the sender's domain %s is %s, not verified", domain, d.Status)
			}
			return nil
		}
	}
	return fmt.Errorf("resend: the sender's domain %s is not in this account", domain)
}
