package outbox

import (
	"container/heap"
	"errors"
	"time"

	"go.uber.org/zap"
)

// Pacer keeps sends within the rates of the providers they go to (docs/design.md,
// "Pacing"). The worker asks it about every claimed delivery before the send starts: a
// delivery over its rate is not sent; unless its slot is near (Worker.takeHold), it does
// not wait in a send slot: its lease is given back at once, uncharged, and it is due
// again when the pacer says.
type Pacer interface {
	// Reserve takes a send slot for d at now (the worker's process clock) and reports
	// true, or takes none and returns false and the time, after now, from which d may
	// be tried again.
	Reserve(d Delivery, now time.Time) (ok bool, retryAt time.Time)
}

// deferSend gives back the lease of a claimed delivery that its rate does not let start
// now: the attempt is not charged (Store.Release) and the delivery is due again at due
// (the database's clock; the pass that claimed it computed it from the pacer's slot and
// armed the worker's wake-up for that slot, w.paced). It runs on the send slot the claim
// took for the row and gives it back when the write is done.
func (w *Worker) deferSend(d Delivery, due time.Time) {
	defer w.inflight.Done()
	defer w.releaseSlots(1)
	ctx, cancel := w.storeCtx()
	defer cancel()
	err := w.cfg.Store.Release(ctx, d.ID, d.LeaseToken, due)
	switch {
	case err == nil:
	case errors.Is(err, ErrLeaseLost):
		w.log.Warn("lease lost before deferring a paced send", deliveryFields(d)...)
	default:
		// The row keeps its lease until it expires, then is claimed again like after a
		// crash (and that claim charges the attempt this one would not have).
		w.log.Error("defer a paced send; the delivery is retried when its lease expires",
			append(deliveryFields(d), zap.Error(err))...)
	}
}

// takeHold takes a hold for a refused delivery whose slot is wait away, so that it waits
// for it in the worker (holdSend) rather than in the store, and reports whether it did:
// only for a wait within PacedHold, while fewer than a quarter of the send slots are
// held so.
//
// Without it, each refused delivery costs a release and a claim, and when claims come
// back later than the rate's interval (a loaded machine: 100-200 ms against SES's 71 ms)
// every pass finds several slots come at once, sends one and defers the rest by an
// interval, so the drain runs at one send per claim: measured 400 e-mails at 14/s in 84 s
// instead of 29 s at a load average of 17 (e2e TestDrillRateLimits).
func (w *Worker) takeHold(wait time.Duration) bool {
	if wait > w.cfg.PacedHold {
		return false
	}
	if w.held.Add(1) > int64(max(1, w.cfg.Concurrency/4)) {
		w.held.Add(-1)
		return false
	}
	return true
}

// holdSend waits, on the lease and send slot the claim took, until the pacer lets d
// through, then sends it. A wait that grows past PacedHold (sends of another instance's
// config, a key shared with a busier route) gives d back to the store as deferSend
// does, as does Stop.
func (w *Worker) holdSend(d Delivery, at time.Time) {
	defer w.held.Add(-1)
	until := w.cfg.Now().Add(w.cfg.PacedHold)
	for {
		if wait := at.Sub(w.cfg.Now()); wait > 0 {
			select {
			case <-w.cfg.After(wait):
			case <-w.sendCtx.Done():
				w.deferSend(d, w.clock.Now().Add(max(0, at.Sub(w.cfg.Now()))))
				return
			}
		}
		now := w.cfg.Now()
		ok, next := w.cfg.Pacer.Reserve(d, now)
		if ok {
			w.process(d)
			return
		}
		if next.After(until) {
			w.pushPaced(next)
			w.Wake() // the loop arms its wake-up for next
			w.deferSend(d, w.clock.Now().Add(next.Sub(now)))
			return
		}
		at = next
	}
}

// pushPaced records that a deferred delivery comes due at (cfg.Now's time).
func (w *Worker) pushPaced(at time.Time) {
	w.pacedMu.Lock()
	heap.Push(&w.paced, at)
	w.pacedMu.Unlock()
}

// dropPacedWakes forgets the deferral times that have come by now: the pass starting at
// now claims what they made due.
func (w *Worker) dropPacedWakes(now time.Time) {
	w.pacedMu.Lock()
	defer w.pacedMu.Unlock()
	for w.paced.Len() > 0 && !w.paced[0].After(now) {
		heap.Pop(&w.paced)
	}
}

// nextPacedWake is the earliest deferral time not yet passed by a pass start.
func (w *Worker) nextPacedWake() (time.Time, bool) {
	w.pacedMu.Lock()
	defer w.pacedMu.Unlock()
	if w.paced.Len() == 0 {
		return time.Time{}, false
	}
	return w.paced[0], true
}

// timeHeap is a min-heap of times (container/heap).
type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
