package ratelimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/ratelimit"
)

// strictWindow is a provider's limit at its strictest: a request is refused (a 429) when
// the requests it accepted in the window before it already number limit. Unlike the
// fakes' token bucket (providers/internal/fakehttp/quota.go) it absorbs no bunching.
type strictWindow struct {
	limit    int
	window   time.Duration
	accepted []time.Time
	refused  int
}

// Allow judges a request that reached the provider at at; requests come in time order.
func (w *strictWindow) Allow(at time.Time) bool {
	n := 0
	for _, a := range w.accepted {
		if at.Sub(a) < w.window {
			n++
		}
	}
	if n >= w.limit {
		w.refused++
		return false
	}
	w.accepted = append(w.accepted, at)
	return true
}

// A backlog of 40 sends at `rate 5/s`, claimed at once, each refused send coming back at
// its slot up to 2 ms late (the worker's hold or claim) and each request reaching the
// provider 0-10 ms after its send started (network, TLS, the provider's clock; the issue
// measured gaps of 196-208 ms): a provider that refuses a 6th request in any second
// refuses none, and the drain takes no longer than the interval's headroom implies.
func TestPacerKeepsEveryWindowWithinTheRate(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(27, seed))
			jitter := func(max time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(max))) }
			var p ratelimit.Pacer
			limits := []ratelimit.Limit{{Key: "webhook https://hooks.example.com/in", PerSecond: 5}}
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			type due struct {
				id string
				at time.Time
			}
			var queue []due
			for i := range 40 {
				queue = append(queue, due{fmt.Sprint(i), t0.Add(time.Duration(i) * 100 * time.Microsecond)})
			}
			var arrivals []time.Time
			for len(queue) > 0 {
				sort.SliceStable(queue, func(i, j int) bool { return queue[i].at.Before(queue[j].at) })
				d := queue[0]
				queue = queue[1:]
				ok, slot := p.Reserve(d.id, limits, d.at)
				if !ok {
					queue = append(queue, due{d.id, slot.Add(jitter(2 * time.Millisecond))})
					continue
				}
				arrivals = append(arrivals, d.at.Add(jitter(10*time.Millisecond)))
			}
			sort.Slice(arrivals, func(i, j int) bool { return arrivals[i].Before(arrivals[j]) })
			provider := &strictWindow{limit: 5, window: time.Second}
			for _, a := range arrivals {
				provider.Allow(a)
			}
			if provider.refused != 0 {
				t.Errorf("%d of 40 sends answered 429 by a strict 5-in-any-second provider", provider.refused)
			}
			took := arrivals[39].Sub(arrivals[0])
			if limit := 39*ratelimit.Interval(5) + 40*2*time.Millisecond + 10*time.Millisecond; took > limit {
				t.Errorf("drain took %v, want at most %v (39 intervals with headroom, plus the lateness)", took, limit)
			}
		})
	}
}

// A Bucket spaces each send from the previous one's actual start, not from the slot it
// was given: a send that woke late (a busy machine) is followed one interval (with
// headroom) after it, not by the next slot on the grid, which may have come already.
func TestBucketSpacesFromTheLastActualSend(t *testing.T) {
	clock := outbox.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := ratelimit.NewBucket(5, clock.Now, clock.After)
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := startWaits(t, b, clock, 2)
	// Both slots come at once: the first waiter is woken 200 ms late.
	clock.Advance(2 * ratelimit.Interval(5))
	waitLen(t, done, 1)
	poll(t, "the second wait to reach the clock again", func() bool { return clock.Waiters() == 1 })
	if len(done) != 1 {
		t.Fatalf("%d sends at one instant after a late wake, want 1", len(done))
	}
	clock.Advance(ratelimit.Interval(5) - time.Millisecond)
	if len(done) != 1 {
		t.Fatal("the next send went before an interval since the late one")
	}
	clock.Advance(time.Millisecond)
	waitLen(t, done, 2)
}

// The interval leaves headroom over the rate: 2% of it.
func TestIntervalHasHeadroom(t *testing.T) {
	if got, want := ratelimit.Interval(5), 204*time.Millisecond; got != want {
		t.Errorf("Interval(5) = %v, want %v", got, want)
	}
}
