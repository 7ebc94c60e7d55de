package intake

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Rate limit defaults.
const (
	// DefaultRateLimitClients bounds the clients the limiter remembers per form (about
	// 150 bytes each): a flood of more distinct addresses evicts the least recently seen.
	DefaultRateLimitClients = 10000
	// DefaultRateLimitStored is how many rate_limited rows a form stores per window; past
	// it, over-limit posts are answered 429 and only counted.
	DefaultRateLimitStored = 100
)

// RateLimit is `rate_limit N WINDOW`: each client may post Requests times per Window to
// this form (a token bucket: the allowance refills smoothly, with bursts up to Requests).
type RateLimit struct {
	Requests int      `json:"requests"`
	Window   Duration `json:"window"`
	// MaxClients bounds the per-client memory; default DefaultRateLimitClients. An
	// evicted client starts again with a full allowance.
	MaxClients int `json:"max_clients,omitempty"`
	// MaxStored bounds how many over-limit posts are stored as quarantined/rate_limited
	// per Window for the whole form; default DefaultRateLimitStored. The rest are
	// answered 429 too but not written (Counters.RateLimitedDropped).
	MaxStored int `json:"max_stored,omitempty"`
}

func (rl *RateLimit) provision() error {
	if rl.Requests <= 0 || rl.Window <= 0 {
		return fmt.Errorf("rate_limit: requests and window must be positive")
	}
	if rl.MaxClients < 0 || rl.MaxStored < 0 {
		return fmt.Errorf("rate_limit: max_clients and max_stored must not be negative")
	}
	if rl.MaxClients == 0 {
		rl.MaxClients = DefaultRateLimitClients
	}
	if rl.MaxStored == 0 {
		rl.MaxStored = DefaultRateLimitStored
	}
	return nil
}

// limiter holds one form's token buckets and its quota of stored rate_limited rows.
type limiter struct {
	cfg RateLimit

	mu      sync.Mutex
	buckets *lru[bucket]
	// The stored-row quota is a fixed window for the whole form, not per client: a flood
	// from many addresses shares it, which is what bounds the rows a flood can write.
	quotaStart time.Time
	quotaUsed  int
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(cfg RateLimit) *limiter {
	return &limiter{cfg: cfg, buckets: newLRU[bucket](cfg.MaxClients)}
}

// allow takes one token from client's bucket. When none is left it returns the wait
// until the next token, rounded up to a whole second (what Retry-After can say).
func (l *limiter) allow(client string, now time.Time) (ok bool, retryAfter time.Duration) {
	per := time.Duration(l.cfg.Window) / time.Duration(l.cfg.Requests) // one token's refill time
	burst := float64(l.cfg.Requests)
	l.mu.Lock()
	defer l.mu.Unlock()
	b, found := l.buckets.get(client)
	if !found {
		b = l.buckets.put(client, bucket{tokens: burst, last: now})
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(burst, b.tokens+float64(elapsed)/float64(per))
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) * float64(per))
	return false, max(1, (wait+time.Second-1)/time.Second) * time.Second
}

// storeQuota reports whether one more rate_limited row may be stored in the current
// window, and uses it up if so.
func (l *limiter) storeQuota(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A now before the window's start is not a new window: concurrent requests take their
	// time before they get here, so an earlier one can arrive after a later one opened
	// the window, and resetting the quota then let one more row past the cap.
	if now.Sub(l.quotaStart) >= time.Duration(l.cfg.Window) {
		l.quotaStart, l.quotaUsed = now, 0
	}
	if l.quotaUsed >= l.cfg.MaxStored {
		return false
	}
	l.quotaUsed++
	return true
}

// clients is how many clients the limiter remembers (for tests of the memory bound).
func (l *limiter) clients() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.len()
}

// clientKey is the rate-limit identity of an address: the IPv4 address, or the /64 of
// an IPv6 address, since one IPv6 subscriber usually holds a whole /64 and could
// otherwise rotate through billions of addresses.
func clientKey(ip string) string {
	parsed := net.ParseIP(ip)
	if parsed == nil {
		return ip
	}
	if v4 := parsed.To4(); v4 != nil {
		return v4.String()
	}
	return parsed.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
