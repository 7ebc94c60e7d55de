package spool

import (
	"fmt"

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
}

// StartFallback starts a replayer that drains s into store and returns both as the
// Acceptor's fallback. stored, when set, runs after every pass that stored something
// (the root wakes the delivery workers with it), and replayed, when set, for each
// submission such a pass stored (the lead ledger counts them). Stop the replayer with Stop; s stays
// open, its owner closes it.
func StartFallback(s *Spool, store outbox.Store, logger *zap.Logger, stored func(), replayed func(StoredPost)) *Fallback {
	f := &Fallback{Spool: s, Replayer: &Replayer{Spool: s, Store: store, Logger: logger, Replayed: replayed}}
	if stored != nil {
		f.Replayer.OnReplay = func(rep Report, _ error) {
			if rep.Stored > 0 {
				stored()
			}
		}
	}
	f.Replayer.Start()
	return f
}

// Stop stops the replayer; the spool stays open.
func (f *Fallback) Stop() { f.Replayer.Stop() }

// Append spools one submission, fsynced when it returns nil.
func (f *Fallback) Append(sub *outbox.Submission, deliveries []outbox.Delivery) error {
	return f.Spool.Append(Entry{Submission: *sub, Deliveries: deliveries})
}

// Waiting is the number of spooled entries not yet replayed.
func (f *Fallback) Waiting() int { return f.Spool.Stats().Entries }

// Wake asks the replayer for a pass soon.
func (f *Fallback) Wake() { f.Replayer.Wake() }

var _ outbox.Spooler = (*Fallback)(nil)
