package intake

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Counters count what the intake defences did without a stored row to show for it, per
// form. Everything that is stored is counted from the database (submissions by status
// and reason); these are the remainder a metrics exporter needs. They live in a package
// registry keyed by form name, so they stay monotonic across config reloads.
type Counters struct {
	// RateLimited counts posts over the form's rate limit (all answered 429).
	RateLimited atomic.Uint64
	// RateLimitedDropped counts the part of RateLimited that was not stored because the
	// form had already stored its quota of rate_limited rows in the current window.
	RateLimitedDropped atomic.Uint64
	// Deduplicated counts double posts answered with the original submission's id.
	Deduplicated atomic.Uint64
}

// CounterSnapshot is a point-in-time copy of one form's Counters.
type CounterSnapshot struct {
	Form               string
	RateLimited        uint64
	RateLimitedDropped uint64
	Deduplicated       uint64
}

var counters sync.Map // form name -> *Counters

// CountersFor returns the counters of form, creating them on first use.
func CountersFor(form string) *Counters {
	if c, ok := counters.Load(form); ok {
		return c.(*Counters)
	}
	c, _ := counters.LoadOrStore(form, new(Counters))
	return c.(*Counters)
}

// ReadCounters returns a snapshot of every form's counters, sorted by form name.
func ReadCounters() []CounterSnapshot {
	var out []CounterSnapshot
	counters.Range(func(k, v any) bool {
		c := v.(*Counters)
		out = append(out, CounterSnapshot{
			Form:               k.(string),
			RateLimited:        c.RateLimited.Load(),
			RateLimitedDropped: c.RateLimitedDropped.Load(),
			Deduplicated:       c.Deduplicated.Load(),
		})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Form < out[j].Form })
	return out
}
