package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// DefaultAcceptTimeout bounds one store write at intake: past it the visitor gets an
// answer (queued from the spool, or a 503) rather than a hanging request.
const DefaultAcceptTimeout = 2 * time.Second

// StatusQueued is the status Acceptor.Accept reports when the store could not take a
// submission and the spool did. It is never stored: the spool's replayer later stores
// the submission with the status intake decided.
const StatusQueued SubmissionStatus = "queued"

// Spooler is the local fallback an Acceptor writes to when the store fails
// (outbox/spool.Fallback is the real one). Append must be durable (fsynced) when it
// returns no error: the visitor is told the submission is safe. It judges sub's
// idempotency key against the spooled submissions as a store judges it against its rows
// and answers alike: the held id with Duplicate for a retry, KeyReused (with sub's id,
// spooled quarantined) for other content, else sub's id with StatusQueued.
type Spooler interface {
	Append(sub *Submission, deliveries []Delivery) (AcceptResult, error)
	// Holds reports whether a spooled submission not yet in the store binds sub's
	// idempotency key.
	Holds(sub *Submission) bool
	// Waiting is the number of spooled submissions not yet in the store.
	Waiting() int
	// Wake asks the replayer to drain the spool soon.
	Wake()
}

// Waker wakes delivery after a commit: *Worker's Broadcast wakes this process's worker
// and, with notifications on, the workers of other instances.
type Waker interface {
	Broadcast(ctx context.Context)
}

// Acceptor takes the submissions of every form handler: it stores each with its
// deliveries in a transaction shared with concurrent posts (GroupCommitter), within
// Timeout, then wakes the worker; when the store fails or is too slow, the spool takes the
// submission and the answer is StatusQueued. The visitor hears success only once the
// submission is committed to the store or fsynced to the spool: if neither took it, the
// error goes back (intake answers it 503).
//
// Set the fields before the first Accept and do not copy an Acceptor after that.
type Acceptor struct {
	Store Store
	// Group shares commits between concurrent Accepts; its zero value has the group
	// commit defaults.
	Group GroupCommitter
	// Timeout bounds one store write. Default DefaultAcceptTimeout.
	Timeout time.Duration
	// WriteAhead appends every submission to the spool before the store (`spool always`),
	// so a crash between the two loses nothing; the replayer later finds it stored.
	WriteAhead bool
	// Waker, when set, is woken after each commit that planned a pending delivery.
	Waker Waker
	// OnStored, when set, is called after each store commit (metrics, events); not for a
	// spooled submission, which is announced when it is replayed.
	OnStored func(*Submission, AcceptResult)
	// OnNotJournaled, when set, is called for a submission stored although WriteAhead's
	// append failed: the journal, and so an off-host backup, never saw it
	// (outbox/backup/monitor.go).
	OnNotJournaled func(*Submission)
	Logger         *zap.Logger
	// Now is the clock intake planned the deliveries' due times by (intake/serve.go:
	// time.Now, the default). On a store with a clock of its own (a DatabaseClock:
	// PostgreSQL) each due time is moved onto the database's clock before it is written,
	// as the worker's leases are (dbclock.go), so a host whose clock is off does not
	// store deliveries due early or late.
	Now func() time.Time

	spool atomic.Pointer[spoolerBox]

	clockOnce sync.Once
	clock     *dbClock   // nil: the store has no clock of its own
	syncing   sync.Mutex // held by the one Accept measuring the offset
}

type spoolerBox struct{ Spooler }

// SetSpool sets (or, with nil, removes) the spool. It may be called while Accepts run:
// the Caddy App opens its spool at Start, after handlers got the Acceptor, and a request
// served before then is answered as with the spool off.
func (a *Acceptor) SetSpool(s Spooler) {
	if s == nil {
		a.spool.Store(nil)
		return
	}
	a.spool.Store(&spoolerBox{s})
}

func (a *Acceptor) spooler() Spooler {
	if b := a.spool.Load(); b != nil {
		return b.Spooler
	}
	return nil
}

// Accept stores sub with its deliveries, or spools it (then the result's Status is
// StatusQueued). The store call gets its own deadline and ignores ctx's cancellation: a
// complete post is worth keeping even if the visitor hung up. An error means neither the
// store nor the spool kept sub; its text names ids, never field values.
//
// A post whose idempotency key a spooled submission binds goes to the spool first, even
// with the store up: the store does not know the key until the replayer stores that
// submission, and would bind the key to this post instead, so the id the first post was
// answered with would never be stored. The spool answers it as the store will once
// replayed (Spooler.Append).
func (a *Acceptor) Accept(ctx context.Context, sub *Submission, deliveries []Delivery) (AcceptResult, error) {
	logger := a.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	sp := a.spooler()
	var queued AcceptResult
	spooled := false
	if sp != nil && (a.WriteAhead || sp.Holds(sub)) {
		res, err := sp.Append(sub, deliveries)
		switch {
		case err != nil:
			// The store is tried all the same: with a held key it may bind the key to
			// this post, but refusing a post the store can take would be worse.
			logger.Error("spool ahead of the store", zap.String("id", sub.ID.String()), zap.Error(err))
		case res.Duplicate || res.KeyReused:
			sp.Wake()
			return res, nil
		default:
			spooled, queued = true, res
		}
	}
	stored, err := a.store(ctx, sub, deliveries)
	if err == nil {
		if sp != nil && a.WriteAhead && !spooled && a.OnNotJournaled != nil {
			a.OnNotJournaled(sub)
		}
		if sp != nil && !spooled && sp.Waiting() > 0 {
			// The store answers again: drain what waited for it.
			sp.Wake()
		}
		return stored, nil
	}
	if spooled {
		logger.Warn("store failed; submission is safe in the spool", zap.String("id", sub.ID.String()), zap.Error(err))
		return queued, nil
	}
	if sp == nil {
		return stored, err
	}
	queued, serr := sp.Append(sub, deliveries)
	if serr != nil {
		return AcceptResult{}, errors.Join(err, fmt.Errorf("spool submission %s: %w", sub.ID, serr))
	}
	logger.Warn("store failed; submission spooled", zap.String("id", sub.ID.String()), zap.Error(err))
	return queued, nil
}

// store is one group-committed store write, then the wake-up of the workers.
func (a *Acceptor) store(ctx context.Context, sub *Submission, deliveries []Delivery) (AcceptResult, error) {
	timeout := orDuration(a.Timeout, DefaultAcceptTimeout) + FileAllowance(sub) // files.go
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	stored, err := a.Group.Accept(sctx, a.Store, sub, a.onDatabaseClock(sctx, deliveries))
	if err != nil {
		return stored, fmt.Errorf("accept submission %s: %w", sub.ID, err)
	}
	// A reused key's post was stored with its deliveries skipped: nothing to wake for.
	if a.Waker != nil && !stored.Duplicate && !stored.KeyReused && hasPending(deliveries) {
		a.Waker.Broadcast(context.WithoutCancel(ctx))
	}
	if a.OnStored != nil {
		a.OnStored(sub, stored)
	}
	return stored, nil
}

func hasPending(ds []Delivery) bool {
	for _, d := range ds {
		if d.Status == DeliveryPending {
			return true
		}
	}
	return false
}

// onDatabaseClock returns deliveries with their due times moved from a.Now's clock onto
// the database's, by the offset measured at most a minute ago (dbclock.go); measuring it
// is one read, made within the accept's deadline by one Accept at a time while the others
// use the last offset. Unchanged on a store without a clock of its own.
func (a *Acceptor) onDatabaseClock(ctx context.Context, deliveries []Delivery) []Delivery {
	a.clockOnce.Do(func() {
		if dc, ok := a.Store.(DatabaseClock); ok {
			now, log := a.Now, a.Logger
			if now == nil {
				now = time.Now
			}
			if log == nil {
				log = zap.NewNop()
			}
			a.clock = &dbClock{store: dc, now: now, log: log}
		}
	})
	if a.clock == nil || len(deliveries) == 0 {
		return deliveries
	}
	if a.syncing.TryLock() {
		a.clock.sync(ctx)
		a.syncing.Unlock()
	}
	offset := time.Duration(a.clock.offset.Load())
	if offset == 0 {
		return deliveries
	}
	moved := make([]Delivery, len(deliveries))
	for i, d := range deliveries {
		d.NextAttemptAt = d.NextAttemptAt.Add(offset)
		moved[i] = d
	}
	return moved
}
