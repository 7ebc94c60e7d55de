package outbox

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Parking defaults (docs/caddyfile.md, "park"; docs/operations.md, "Parked destinations").
const (
	// DefaultParkAfter consecutive failures of one destination park it: with the retry
	// schedule's first waits (30s, 1m, 2m, ...) that is a few minutes of a destination
	// failing everything, and a transient blip (one or two failures) never parks.
	DefaultParkAfter = 5
	// DefaultParkRatio of failures among at least DefaultParkMinSamples outcomes within
	// DefaultParkWindow parks a destination that fails most of the time without failing
	// five in a row (a flapping receiver).
	DefaultParkRatio      = 0.8
	DefaultParkWindow     = 10 * time.Minute
	DefaultParkMinSamples = 20
	// DefaultProbeFirst is the wait before the first probe; each failed probe doubles it,
	// up to DefaultProbeMax.
	DefaultProbeFirst = time.Minute
	DefaultProbeMax   = time.Hour
	// DefaultParkRefresh is how stale the worker's copy of the parked set may get while it
	// claims (another instance may park or unpark, on PostgreSQL).
	DefaultParkRefresh = 5 * time.Second
)

// maxOutcomes bounds the outcomes a destination's ratio window keeps in memory.
const maxOutcomes = 1000

// ParkPolicy says when the worker parks a destination and how it probes it (docs/design.md,
// "Parked destinations"). Zero values mean the defaults above.
type ParkPolicy struct {
	// Off disables automatic parking: destinations are parked only by hand, and a
	// destination's permanent failure kills its delivery as before.
	Off bool
	// After is the number of consecutive failures that parks a destination; a permanent
	// destination failure (providers.Error.Destination) parks it at once.
	After int
	// Ratio, Window and MinSamples: a failure ratio of at least Ratio among at least
	// MinSamples outcomes within Window parks too. Ratio > 1 disables the rule.
	Ratio      float64
	Window     time.Duration
	MinSamples int
	// ProbeFirst and ProbeMax are the probe schedule: the first probe waits ProbeFirst,
	// each failed one doubles the wait, up to ProbeMax.
	ProbeFirst time.Duration
	ProbeMax   time.Duration
	// Refresh is how stale the cached parked set may get while the worker claims.
	Refresh time.Duration
	// Email names the e-mail destination: the e-mail provider chain's name
	// (DestinationOf).
	Email string
}

func (p ParkPolicy) withDefaults() ParkPolicy {
	if p.After <= 0 {
		p.After = DefaultParkAfter
	}
	if p.Ratio <= 0 {
		p.Ratio = DefaultParkRatio
	}
	if p.Window <= 0 {
		p.Window = DefaultParkWindow
	}
	if p.MinSamples <= 0 {
		p.MinSamples = DefaultParkMinSamples
	}
	if p.ProbeFirst <= 0 {
		p.ProbeFirst = DefaultProbeFirst
	}
	if p.ProbeMax <= 0 {
		p.ProbeMax = DefaultProbeMax
	}
	p.ProbeMax = max(p.ProbeMax, p.ProbeFirst)
	if p.Refresh <= 0 {
		p.Refresh = DefaultParkRefresh
	}
	return p
}

// healthBook counts each failing destination's recent outcomes, in memory: the counts
// are this instance's (docs/design.md, "Parked destinations"). A destination enters it
// on its first failure and leaves once it has no failure left in the window, so a
// healthy instance keeps nothing and pays a map read per success only while some
// destination is failing.
type healthBook struct {
	policy ParkPolicy
	mu     sync.Mutex
	dests  map[string]*destHealth
	// counted mirrors len(dests) so that a success tests it without the lock.
	counted atomic.Int32
}

type destHealth struct {
	consecutive int
	outcomes    []outcomeAt // within the window, oldest first
}

type outcomeAt struct {
	at time.Time
	ok bool
}

// failed records a failure of key at now and returns why key should be parked, or "".
func (b *healthBook) failed(key string, now time.Time) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dests == nil {
		b.dests = make(map[string]*destHealth)
	}
	h := b.dests[key]
	if h == nil {
		h = &destHealth{}
		b.dests[key] = h
		b.counted.Store(int32(len(b.dests)))
	}
	h.consecutive++
	h.add(outcomeAt{at: now}, now, b.policy.Window)
	if h.consecutive >= b.policy.After {
		return fmt.Sprintf("%d consecutive failures", h.consecutive)
	}
	if n := len(h.outcomes); n >= b.policy.MinSamples {
		fails := 0
		for _, o := range h.outcomes {
			if !o.ok {
				fails++
			}
		}
		if r := float64(fails) / float64(n); r >= b.policy.Ratio {
			return fmt.Sprintf("%d of %d sends failed within %s", fails, n, b.policy.Window)
		}
	}
	return ""
}

// succeeded records a success of key at now.
func (b *healthBook) succeeded(key string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.dests[key]
	if h == nil {
		return
	}
	h.consecutive = 0
	h.add(outcomeAt{at: now, ok: true}, now, b.policy.Window)
	for _, o := range h.outcomes {
		if !o.ok {
			return
		}
	}
	delete(b.dests, key)
	b.counted.Store(int32(len(b.dests)))
}

// forget drops key's counts: it was parked or unparked, and starts afresh.
func (b *healthBook) forget(key string) {
	b.mu.Lock()
	delete(b.dests, key)
	b.counted.Store(int32(len(b.dests)))
	b.mu.Unlock()
}

// tracking reports whether any destination is being counted: one atomic load, on every
// success.
func (b *healthBook) tracking() bool { return b.counted.Load() > 0 }

func (h *destHealth) add(o outcomeAt, now time.Time, window time.Duration) {
	h.outcomes = append(h.outcomes, o)
	cut := 0
	for cut < len(h.outcomes) && (now.Sub(h.outcomes[cut].at) > window || len(h.outcomes)-cut > maxOutcomes) {
		cut++
	}
	h.outcomes = h.outcomes[cut:]
}
