// Package chain is email failover: it tries providers in order within one attempt
// (SES, then Resend) and moves on only when the error says another provider may help.
package chain

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// Chain tries its providers in order. It is itself a providers.Provider, so the outbox
// sees one email provider and one attempt per try, whichever provider ended up handling
// it.
type Chain struct {
	list []providers.Provider
	name string
}

// New returns a chain over ps (at least one).
func New(ps ...providers.Provider) *Chain {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name()
	}
	return &Chain{list: ps, name: strings.Join(names, ",")}
}

// Name implements providers.Provider: the providers' names joined by commas.
func (c *Chain) Name() string { return c.name }

// Send implements providers.Provider. The Result names the provider that handled the
// message, also on failure (the last one tried), so the attempt row says where it went.
//
// It fails over only when the error allows it (a refused connection, throttling, an
// account problem) and never after an Ambiguous or Permanent error: the first may have
// been delivered already, the second is about the message, not the provider. The error
// returned is the last provider's, classified as it was, with the earlier failures
// prepended to its text so the attempt history shows the whole path.
//
// A Permanent error with Destination set (a revoked key, a suspended account) is the
// provider's failure, not the message's, so it fails over like a Temporary one. The
// chain's error is the destination's (Destination set) only when every provider tried
// failed as a destination: the whole account chain refused for a reason that is not the
// recipient's, which is what parks e-mail (docs/operations.md, "Parked destinations").
// A recipient's bounce from any of them is the message's.
func (c *Chain) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	if len(c.list) == 0 {
		return providers.Result{}, &providers.Error{Class: providers.Permanent, Code: "no_provider",
			Err: errors.New("no email provider configured")}
	}
	var earlier []string
	allDestination := true
	for i, p := range c.list {
		res, err := p.Send(ctx, m)
		if res.Provider == "" {
			res.Provider = p.Name()
		}
		if err == nil {
			return res, nil
		}
		perr := providers.Classify(err)
		last := i == len(c.list)-1
		allDestination = allDestination && perr.Destination
		canFailover := perr.Class == providers.Temporary || (perr.Class == providers.Permanent && perr.Destination)
		if last || !perr.Failover || !canFailover || ctx.Err() != nil {
			if len(earlier) == 0 {
				return res, err
			}
			out := *perr
			out.Destination = allDestination
			out.Err = fmt.Errorf("%s; then %s: %w", strings.Join(earlier, "; "), res.Provider, err)
			return res, &out
		}
		earlier = append(earlier, res.Provider+": "+err.Error())
	}
	panic("unreachable")
}

var _ providers.Provider = (*Chain)(nil)
