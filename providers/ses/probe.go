package ses

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/sesv2"
)

// Probe asks SES for the account's state (GetAccount, a read): wrong credentials or
// region fail it, and an account whose sending is paused (by AWS for its bounce or
// complaint rate, or by the owner) is reported, since every send would fail.
func (p *Provider) Probe(ctx context.Context) error {
	out, err := p.client.GetAccount(ctx, &sesv2.GetAccountInput{})
	if err != nil {
		return fmt.Errorf("ses: GetAccount: %w", err)
	}
	if !out.SendingEnabled {
		return fmt.Errorf("ses: sending is paused for this account (see the SES console's account dashboard)")
	}
	return nil
}
