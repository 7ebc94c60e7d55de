package outbox

import (
	"sort"
	"sync"
	"time"
)

// ManualClock is a clock that only moves when told to. Tests hand its Now and After to a
// WorkerConfig to drive leases, backoff and ticks without sleeping: a lease expires when
// the test advances past it, and a tick fires when the test advances past the poll
// interval.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []clockWaiter
	// added, when set, is closed by the next After (AwaitWaiters waits on it).
	added chan struct{}
}

type clockWaiter struct {
	at time.Time
	ch chan time.Time
}

// NewManualClock returns a clock that reads start until advanced.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the clock's time once the clock has been advanced
// by at least d from now. A non-positive d fires at once.
func (c *ManualClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, clockWaiter{at: c.now.Add(d), ch: ch})
	if c.added != nil {
		close(c.added)
		c.added = nil
	}
	return ch
}

// AwaitWaiters blocks until at least n After calls are pending, or timeout (real time)
// has passed, and reports whether they are: a test knows the code under it is waiting on
// the clock again, with no polling.
func (c *ManualClock) AwaitWaiters(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		if len(c.waiters) >= n {
			c.mu.Unlock()
			return true
		}
		if c.added == nil {
			c.added = make(chan struct{})
		}
		added := c.added
		c.mu.Unlock()
		select {
		case <-added:
		case <-deadline.C:
			return false
		}
	}
}

// Advance moves the clock forward by d and fires every After whose time has come, in
// time order.
func (c *ManualClock) Advance(d time.Duration) {
	c.Set(c.Now().Add(d))
}

// Set moves the clock to t (never backwards) and fires every After whose time has come.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	sort.SliceStable(c.waiters, func(i, j int) bool { return c.waiters[i].at.Before(c.waiters[j].at) })
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now // buffered, never blocks
	}
	c.waiters = kept
}

// Waiters is the number of pending After calls: a test advances the clock only once the
// worker is known to be waiting on it, otherwise the tick would be armed after the jump.
func (c *ManualClock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}
