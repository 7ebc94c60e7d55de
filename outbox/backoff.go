package outbox

import (
	"math/rand/v2"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// Retry defaults (docs/design.md, 'Backoff and retries').
const (
	DefaultRetryBase     = 30 * time.Second
	DefaultRetryMaxDelay = 6 * time.Hour
	DefaultRetryJitter   = 0.2
)

// RetryPolicy spaces the attempts of a failing delivery: exponential backoff with a cap and
// jitter, so that a receiver that is down for an hour is neither hammered nor forgotten,
// and the retries of a burst of deliveries that failed together spread out instead of
// arriving together again.
type RetryPolicy struct {
	// Base is the delay after the first failed attempt. Default 30s.
	Base time.Duration
	// MaxDelay caps the backoff (not a provider's Retry-After). Default 6h.
	MaxDelay time.Duration
	// Jitter is the relative spread around the backoff: 0.2 means +-20%. Zero means the
	// default 0.2; a negative value turns jitter off (useful for exact schedules).
	Jitter float64
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Base <= 0 {
		p.Base = DefaultRetryBase
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultRetryMaxDelay
	}
	if p.MaxDelay < p.Base {
		p.MaxDelay = p.Base
	}
	// A negative Jitter stays negative (off) so that applying defaults twice is harmless.
	switch {
	case p.Jitter == 0:
		p.Jitter = DefaultRetryJitter
	case p.Jitter > 1:
		p.Jitter = 1
	}
	return p
}

// Delay is the wait after the attempts-th failed attempt: min(Base*2^(attempts-1),
// MaxDelay), then spread by +-Jitter. rnd returns a number in [0, 1); nil uses a
// process-wide source.
func (p RetryPolicy) Delay(attempts int, rnd func() float64) time.Duration {
	p = p.withDefaults()
	if attempts < 1 {
		attempts = 1
	}
	d := p.MaxDelay
	// Doubling past the cap would overflow long before attempts runs out; stop as soon
	// as the cap is reached.
	if shift := attempts - 1; shift < 62 {
		if b := p.Base << shift; b > 0 && b>>shift == p.Base && b < p.MaxDelay {
			d = b
		}
	}
	if p.Jitter < 0 {
		return d
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	f := 1 + p.Jitter*(2*rnd()-1)
	return time.Duration(float64(d) * f)
}

// Next is the wait before the next attempt after a failure classified as perr: the
// backoff, or longer if the provider asked for more with Retry-After. A provider's wish
// is honoured even past MaxDelay: sending earlier would only be refused again.
func (p RetryPolicy) Next(attempts int, perr *providers.Error, rnd func() float64) time.Duration {
	d := p.Delay(attempts, rnd)
	if perr != nil && perr.RetryAfter > d {
		d = perr.RetryAfter
	}
	return d
}
