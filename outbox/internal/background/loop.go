// Package background runs the outbox's periodic services, the digest closer
// (outbox/digest) and the canary scheduler (outbox/canary), one way: a goroutine that
// runs a pass, sleeps on the service's clock until the time the pass asked for, tries a
// failed pass again sooner, and ends when stopped.
package background

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Config is a loop's clock and what it says when a pass fails.
type Config struct {
	// Now and After are the service's clock (tests pass an outbox.ManualClock's);
	// default the real one.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// Retry bounds the wait after a failed pass (the database is down).
	Retry  time.Duration
	Logger *zap.Logger // default: none
	// Failed is the log message of a failed pass, e.g. "close digest periods; trying
	// again".
	Failed string
}

// Pass is one wake-up of a service at now: it does what is due and says when to wake
// next. An error is logged and the next wake-up comes within Config.Retry.
type Pass func(ctx context.Context, now time.Time) (next time.Time, err error)

// Loop is a started service; its zero value is ready for Start.
type Loop struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Start runs pass at once and then when each pass asks, until Stop or ctx ends.
func (l *Loop) Start(ctx context.Context, c Config, pass Pass) {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.After == nil {
		c.After = time.After
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		for {
			now := c.Now()
			next, err := pass(ctx, now)
			wait := next.Sub(now)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				c.Logger.Warn(c.Failed, zap.Error(err), zap.Duration("in", c.Retry))
				wait = min(wait, c.Retry)
			}
			select {
			case <-ctx.Done():
				return
			case <-c.After(wait):
			}
		}
	}()
}

// Stop ends the loop and waits for the pass in progress to return. It does nothing if
// the loop was never started, and may be called more than once.
func (l *Loop) Stop() {
	l.once.Do(func() {
		if l.cancel != nil {
			l.cancel()
			<-l.done
		}
	})
}
