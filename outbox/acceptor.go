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
// returns nil: the visitor is told the submission is safe.
type Spooler interface {
	Append(sub *Submission, deliveries []Delivery) error
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
func (a *Acceptor) Accept(ctx context.Context, sub *Submission, deliveries []Delivery) (AcceptResult, error) {
	logger := a.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	queued := AcceptResult{ID: sub.ID, Status: StatusQueued}
	sp := a.spooler()
	spooled := false
	if sp != nil && a.WriteAhead {
		if err := sp.Append(sub, deliveries); err != nil {
			logger.Error("spool ahead of the store", zap.String("id", sub.ID.String()), zap.Error(err))
		} else {
			spooled = true
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
	if serr := sp.Append(sub, deliveries); serr != nil {
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
