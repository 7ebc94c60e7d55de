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
	// templateEmpty counts template.empty events per route (route name ->
	// *atomic.Uint64): a field a message printed was missing from the post
	// (templateempty.go). Stored as events too; counted here so the metric needs no
	// query per scrape.
	templateEmpty sync.Map
}

// TemplateEmpty returns the counter of route's template.empty events, creating it at 0.
func (c *Counters) TemplateEmpty(route string) *atomic.Uint64 {
	if v, ok := c.templateEmpty.Load(route); ok {
		return v.(*atomic.Uint64)
	}
	v, _ := c.templateEmpty.LoadOrStore(route, new(atomic.Uint64))
	return v.(*atomic.Uint64)
}

// CounterSnapshot is a point-in-time copy of one form's Counters.
type CounterSnapshot struct {
	Form               string
	RateLimited        uint64
	RateLimitedDropped uint64
	Deduplicated       uint64
	TemplateEmpty      map[string]uint64 // per route
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
			TemplateEmpty:      c.templateEmptySnapshot(),
		})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Form < out[j].Form })
	return out
}

func (c *Counters) templateEmptySnapshot() map[string]uint64 {
	var out map[string]uint64
	c.templateEmpty.Range(func(k, v any) bool {
		if out == nil {
			out = map[string]uint64{}
		}
		out[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}
