// Package ratelimit paces sends to a provider's published rate, so that a backlog (the
// queue after an outage) drains at the rate the provider accepts instead of in a burst
// it answers with 429s, each of which costs an attempt and a backoff.
package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// Off is the rate text that turns pacing off.
const Off = "off"

// Parse reads a rate written "N/s" or "N/m" (N may have a fraction, e.g. 0.5/s), or
// "off". It returns sends per second; 0 means unlimited.
func Parse(s string) (float64, error) {
	if s == Off {
		return 0, nil
	}
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("rate %q: want N/s, N/m or off", s)
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 || n > 1e6 {
		return 0, fmt.Errorf("rate %q: %q is not a positive number of sends", s, num)
	}
	switch unit {
	case "s":
		return n, nil
	case "m":
		return n / 60, nil
	default:
		return 0, fmt.Errorf("rate %q: unit %q: want s or m", s, unit)
	}
}

// Bucket is a token bucket holding one token: sends are spaced Interval apart, never
// bunched, so a provider that counts requests per second (SES, Resend) never sees more
// than rate in any second. Each Wait reserves the next free slot, so waiters are served
// in the order they arrived and none waits longer than the queue ahead of it implies; a
// waiter woken for its slot still goes only an interval after the previous send actually
// started: one woken late (a busy machine) would otherwise be followed at once by the next
// slot on the grid, which may have come already.
type Bucket struct {
	interval time.Duration
	now      func() time.Time
	after    func(time.Duration) <-chan time.Time

	mu   sync.Mutex
	next time.Time // the slot of the next Wait: the end of the queue of reserved slots
	last time.Time // when the last send went
}

// NewBucket paces to perSecond sends a second (it must be positive). now and after are
// the clock, time.Now and time.After when nil; tests pass a manual clock.
func NewBucket(perSecond float64, now func() time.Time, after func(time.Duration) <-chan time.Time) *Bucket {
	if now == nil {
		now = time.Now
	}
	if after == nil {
		after = time.After
	}
	return &Bucket{interval: Interval(perSecond), now: now, after: after}
}

// Wait returns once the caller may send, or ctx's error when ctx ends first; a caller
// that gives up hands its slot back to those behind it only if none was taken after it,
// which keeps the spacing of the later ones.
func (b *Bucket) Wait(ctx context.Context) error {
	b.mu.Lock()
	now := b.now()
	at := b.next
	if at.Before(now) {
		at = now
	}
	slot := at
	b.next = at.Add(b.interval)
wait:
	for {
		if !b.last.IsZero() {
			at = latest(at, b.last.Add(b.interval))
		}
		wait := at.Sub(now)
		if wait <= 0 {
			ok := ctx.Err() == nil
			if ok {
				b.last = now
			}
			b.mu.Unlock()
			if ok {
				return nil
			}
			break
		}
		b.mu.Unlock()
		select {
		case <-b.after(wait):
		case <-ctx.Done():
			break wait
		}
		b.mu.Lock()
		now = b.now()
	}
	// Given up: hand the slot back, whether the wait was cut short or ctx had ended
	// before it began.
	b.mu.Lock()
	if b.next.Equal(slot.Add(b.interval)) {
		b.next = slot
	}
	b.mu.Unlock()
	return ctx.Err()
}

// Provider sends through Next once Bucket allows. A send cut short while waiting was
// never made, so it fails as temporary.
type Provider struct {
	Next   providers.Provider
	Bucket *Bucket
}

// Wrap paces p to perSecond sends a second; perSecond 0 returns p unchanged.
func Wrap(p providers.Provider, perSecond float64) providers.Provider {
	if perSecond <= 0 {
		return p
	}
	return &Provider{Next: p, Bucket: NewBucket(perSecond, nil, nil)}
}

// Name is the wrapped provider's.
func (p *Provider) Name() string { return p.Next.Name() }

// Send waits for the bucket, then sends.
func (p *Provider) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	if err := p.Bucket.Wait(ctx); err != nil {
		return providers.Result{Provider: p.Next.Name()}, &providers.Error{Class: providers.Temporary, Code: "rate_wait",
			Err: fmt.Errorf("waiting for the send rate of %s: %w", p.Next.Name(), err)}
	}
	return p.Next.Send(ctx, m)
}

var _ providers.Provider = (*Provider)(nil)

// Limit is one rate a send must respect: the key names what the rate applies to (a
// provider, a webhook URL, a chat), PerSecond is its rate (positive).
type Limit struct {
	Key       string
	PerSecond float64
}

// Pacer spaces sends per key without waiting: the worker asks it before a send starts
// (docs/design.md, "Pacing"), and a send it refuses is put back in the queue, due when
// the pacer says, instead of holding a send slot while it waits. A refused send is given
// a slot of its own, after the ones given before, and keeps it: when it comes back at that
// time it is let through, however late its claim, as soon as the key's last send is an
// interval old; sends that arrive meanwhile queue behind it. A key's rate is fixed by the first Reserve that names it. The zero value is
// ready to use and safe for concurrent use.
type Pacer struct {
	mu       sync.Mutex
	buckets  map[string]*pace
	reserved map[string]time.Time // id of a refused send -> the slot it was given
	swept    time.Time            // when reserved was last cleared of stale slots
}

// staleReservation is how long past its slot a refused send keeps it. The worker claims
// a refused send again as soon as its slot comes, so one that has not come back long
// after was claimed by another instance, retried by hand or erased.
const staleReservation = 10 * time.Minute

// pace is one key's schedule.
type pace struct {
	interval time.Duration
	next     time.Time // the earliest start of the next send
	deferred time.Time // one interval past the last slot given to a refused send
}

// Reserve decides about the send id under limits at now. A send given a slot before is
// let through once its slot has come. Otherwise, when every key is free (no send within
// its interval, no refused one waiting), it takes a slot at now and reports true; else it
// takes none and returns false and the slot the send is given: the latest of the keys'
// next free times and their last given slots. With no limits it always reports true.
func (p *Pacer) Reserve(id string, limits []Limit, now time.Time) (bool, time.Time) {
	if len(limits) == 0 {
		return true, now
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.buckets == nil {
		p.buckets = make(map[string]*pace)
		p.reserved = make(map[string]time.Time)
	}
	paces := make([]*pace, len(limits))
	for i, l := range limits {
		b := p.buckets[l.Key]
		if b == nil {
			b = &pace{interval: Interval(l.PerSecond)}
			p.buckets[l.Key] = b
		}
		paces[i] = b
	}
	if slot, ok := p.reserved[id]; ok {
		// Its slot has come, but sends are still an interval apart: two refused sends
		// whose claims both came late go one interval after the other, not together.
		at := slot
		for _, b := range paces {
			at = latest(at, b.next)
		}
		if at.After(now) {
			if at != slot {
				p.reserved[id] = at
				for _, b := range paces {
					b.deferred = latest(b.deferred, at.Add(b.interval))
				}
			}
			return false, at
		}
		delete(p.reserved, id)
		for _, b := range paces {
			b.next = latest(b.next, now.Add(b.interval))
		}
		return true, now
	}
	at := now
	for _, b := range paces {
		at = latest(at, latest(b.next, b.deferred))
	}
	if !at.After(now) {
		for _, b := range paces {
			b.next = now.Add(b.interval)
		}
		return true, now
	}
	// Only the keys that set the slot move their queue on, so a key that is merely
	// shared (a Telegram bot across its chats) is not pushed back by one busy chat's.
	for _, b := range paces {
		if !latest(b.next, b.deferred).Before(at) {
			b.deferred = at.Add(b.interval)
		}
	}
	p.reserved[id] = at
	p.sweep(now)
	return false, at
}

// sweep forgets, at most once a minute, the slots that stayed unclaimed past
// staleReservation.
func (p *Pacer) sweep(now time.Time) {
	if now.Sub(p.swept) < time.Minute {
		return
	}
	p.swept = now
	for id, slot := range p.reserved {
		if now.Sub(slot) > staleReservation {
			delete(p.reserved, id)
		}
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Headroom is how much longer than 1/rate sends are spaced (docs/design.md, "Pacing").
// We space from the start of our previous send, but the provider counts arrivals, which
// come after a start by a varying few milliseconds (scheduling, connection, TLS; the
// issue that added this measured gaps of 196-208 ms at 5/s): with exact spacing, a send
// that arrives early after one that arrived late puts rate+1 requests into one of the
// provider's windows. The headroom adds up over a window's sends, so 2% of the interval
// gives any window 2% of its length of slack (20 ms in a second, 1.2 s in a minute):
// over twice the jitter measured, and the drain 2% slower than the nominal rate.
const Headroom = 0.02

// Interval is the spacing of sends at perSecond (positive): 1/perSecond plus Headroom.
func Interval(perSecond float64) time.Duration {
	return time.Duration(float64(time.Second) * (1 + Headroom) / perSecond)
}
