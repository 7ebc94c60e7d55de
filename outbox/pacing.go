package outbox

import (
	"container/heap"
	"errors"
	"time"

	"go.uber.org/zap"
)

// Pacer keeps sends within the rates of the providers they go to (docs/design.md,
// "Pacing"). The worker asks it about every claimed delivery before the send starts: a
// delivery over its rate is not sent and does not wait in a send slot; its lease is
// given back at once, uncharged, and it is due again when the pacer says.
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

// dropPacedWakes forgets the deferral times that have come by now: the pass starting at
// now claims what they made due.
func (w *Worker) dropPacedWakes(now time.Time) {
	for w.paced.Len() > 0 && !w.paced[0].After(now) {
		heap.Pop(&w.paced)
	}
}

// nextPacedWake is the earliest deferral time not yet passed by a pass start.
func (w *Worker) nextPacedWake() (time.Time, bool) {
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
