package spool

import "github.com/formoutbox/caddy-form-outbox/outbox"

// Fallback is a spool and the replayer that drains it, as outbox.Acceptor uses them when
// the store fails.
type Fallback struct {
	Spool    *Spool
	Replayer *Replayer
}

// Append spools one submission, fsynced when it returns nil.
func (f *Fallback) Append(sub *outbox.Submission, deliveries []outbox.Delivery) error {
	return f.Spool.Append(Entry{Submission: *sub, Deliveries: deliveries})
}

// Waiting is the number of spooled entries not yet replayed.
func (f *Fallback) Waiting() int { return f.Spool.Stats().Entries }

// Wake asks the replayer for a pass soon.
func (f *Fallback) Wake() { f.Replayer.Wake() }

var _ outbox.Spooler = (*Fallback)(nil)
