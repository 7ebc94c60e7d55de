package smtp

import (
	"context"
)

// Probe implements providers.Prober: it connects, greets the relay (EHLO), starts TLS
// and authenticates exactly as a send would, then says QUIT before MAIL FROM, so no
// message is begun and the relay has nothing to queue or bounce.
func (p *Provider) Probe(ctx context.Context) error {
	cl, _, done, perr := p.session(ctx)
	if perr != nil {
		return perr
	}
	defer done()
	if err := cl.Quit(); err != nil {
		return p.classify(ctx, stEHLO, err, false)
	}
	return nil
}
