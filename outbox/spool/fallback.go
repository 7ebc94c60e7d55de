package spool

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Spool modes, the values of `spool DIR | off | always` (internal/caddyconf/caddyfile_spool.go).
const (
	// ModeFallback ("") spools only when the store fails or is too slow.
	ModeFallback = ""
	// ModeOff: a store failure is a 503; nothing is written locally.
	ModeOff = "off"
	// ModeAlways: write-ahead; every submission is fsynced to the spool before the
	// store, and the replayer later finds it stored (a no-op) or stores it.
	ModeAlways = "always"
)

// CheckMode refuses a mode that is none of the above.
func CheckMode(mode string) error {
	switch mode {
	case ModeFallback, ModeOff, ModeAlways:
		return nil
	}
	return fmt.Errorf("spool: unknown mode %q (want off or always)", mode)
}

// Fallback is a spool and the replayer that drains it, as outbox.Acceptor uses them when
// the store fails.
type Fallback struct {
	Spool    *Spool
	Replayer *Replayer

	// failingSince is when the replayer's passes began failing (unix nanoseconds), 0
	// while the last pass stored: the store_unreachable alert's state (outbox/alert).
	failingSince atomic.Int64
}

// StartFallback starts a replayer that drains s into store and returns both as the
// Acceptor's fallback. stored, when set, runs after every pass that stored something
// (the root wakes the delivery workers with it), and replayed, when set, for each
// submission such a pass stored (the lead ledger counts them). Stop the replayer with Stop; s stays
// open, its owner closes it.
func StartFallback(s *Spool, store outbox.Store, logger *zap.Logger, stored func(), replayed func(StoredPost)) *Fallback {
	f := &Fallback{Spool: s, Replayer: &Replayer{Spool: s, Store: store, Logger: logger, Replayed: replayed}}
	f.Replayer.OnReplay = func(rep Report, err error) {
		switch {
		case err == nil:
			f.failingSince.Store(0)
		case !errors.Is(err, context.Canceled):
			f.failingSince.CompareAndSwap(0, time.Now().UnixNano())
		}
		if stored != nil && rep.Stored > 0 {
			stored()
		}
	}
	f.Replayer.Start()
	return f
}

// Stop stops the replayer; the spool stays open.
func (f *Fallback) Stop() { f.Replayer.Stop() }

// Append spools one submission, judging its idempotency key against the spooled ones
// (Spool.Accept); what it appended is fsynced when it returns no error.
func (f *Fallback) Append(sub *outbox.Submission, deliveries []outbox.Delivery) (outbox.AcceptResult, error) {
	return f.Spool.Accept(Entry{Submission: *sub, Deliveries: deliveries})
}

// Holds reports whether a spooled submission binds sub's idempotency key.
func (f *Fallback) Holds(sub *outbox.Submission) bool { return f.Spool.Holds(sub) }

// Waiting is the number of spooled entries not yet replayed.
func (f *Fallback) Waiting() int { return f.Spool.Stats().Entries }

// FailingSince is when replaying into the store began to fail, with no pass that
// stored since; zero while the store takes what the spool holds (or nothing waits).
func (f *Fallback) FailingSince() time.Time {
	if n := f.failingSince.Load(); n != 0 {
		return time.Unix(0, n).UTC()
	}
	return time.Time{}
}

// Wake asks the replayer for a pass soon.
func (f *Fallback) Wake() { f.Replayer.Wake() }

var _ outbox.Spooler = (*Fallback)(nil)
