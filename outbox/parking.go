package outbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// parkedSet is the worker's copy of the parked destinations (docs/design.md, "Parked
// destinations"). The claim query does not know about parking: a parked destination's
// deliveries are simply not in a due status, and a delivery that comes due for one (a
// new lead, a retry scheduled before the park) is held by the worker when claimed. The
// copy makes that check a map read; it is loaded when the worker starts, updated by this
// worker's own parks and unparks, and read again from the store at most every
// ParkPolicy.Refresh while claims return work, since another instance may have changed it
// (PostgreSQL). A stale copy costs at most a send to a destination that was just parked
// (its failure then holds it) or a hold the store refuses (the store is the judge: it
// answers ErrNotParked, and the delivery is sent).
type parkedSet struct {
	mu       sync.Mutex
	byKey    map[string]ParkedDestination
	loadedAt time.Time // by the worker's process clock (cfg.Now)
	loaded   bool
	// any mirrors len(byKey) > 0 for the claim path's lock-free test.
	any atomic.Bool
	// armed is the probe time (unix nanoseconds, cfg.Now's clock) last given to the
	// loop's wake heap, so that reading the set every few seconds under load does not
	// push the same time again each time.
	armed atomic.Int64
}

func (p *parkedSet) get(key string) (ParkedDestination, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.byKey[key]
	return d, ok
}

func (p *parkedSet) put(d ParkedDestination) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byKey == nil {
		p.byKey = make(map[string]ParkedDestination)
	}
	p.byKey[d.Key] = d
	p.any.Store(true)
}

func (p *parkedSet) drop(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byKey, key)
	p.any.Store(len(p.byKey) > 0)
}

func (p *parkedSet) replace(list []ParkedDestination, at time.Time) {
	m := make(map[string]ParkedDestination, len(list))
	for _, d := range list {
		m[d.Key] = d
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byKey, p.loadedAt, p.loaded = m, at, true
	p.any.Store(len(m) > 0)
}

func (p *parkedSet) isLoaded() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loaded
}

func (p *parkedSet) stale(now time.Time, refresh time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.loaded || now.Sub(p.loadedAt) >= refresh
}

// probesDue returns the automatic parks whose probe may start at now.
func (p *parkedSet) probesDue(now time.Time) []ParkedDestination {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []ParkedDestination
	for _, d := range p.byKey {
		if !d.Manual && !d.ProbeAt.IsZero() && !d.ProbeAt.After(now) {
			out = append(out, d)
		}
	}
	return out
}

// nextProbe is the earliest probe time of an automatic park.
func (p *parkedSet) nextProbe() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var at time.Time
	for _, d := range p.byKey {
		if !d.Manual && !d.ProbeAt.IsZero() && (at.IsZero() || d.ProbeAt.Before(at)) {
			at = d.ProbeAt
		}
	}
	return at, !at.IsZero()
}

// destination names d's destination under the worker's policy.
func (w *Worker) destination(d Delivery) Destination {
	return DestinationOf(d, w.cfg.Parking.Email)
}

// loadParked reads the parked set from the store, from the claim loop: the loop arms
// its wake for the next probe after the pass (armProbeWake).
func (w *Worker) loadParked(ctx context.Context) {
	list, err := w.cfg.Store.ListParkedDestinations(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("read parked destinations; keeping the last copy", zap.Error(err))
		}
		return
	}
	w.parked.replace(list, w.cfg.Now())
	w.armProbeWake()
}

// refreshParked is loadParked from outside the claim loop (a send's goroutine, an
// operator's request): the loop may be waiting with no wake armed for a probe time it
// has not seen, so it is woken to arm one.
func (w *Worker) refreshParked(ctx context.Context) {
	w.loadParked(ctx)
	w.Wake()
}

// refreshParkedNow is refreshParked on a store write's deadline.
func (w *Worker) refreshParkedNow() {
	ctx, cancel := w.storeCtx()
	defer cancel()
	w.refreshParked(ctx)
}

// hold writes h through the store, on a store write's deadline.
func (w *Worker) hold(h Hold) error {
	ctx, cancel := w.storeCtx()
	defer cancel()
	return w.cfg.Store.HoldDelivery(ctx, h)
}

// refreshParkedIfStale reads the parked set when the copy is older than the policy's
// Refresh: called when a claim returned work, so an idle worker reads nothing.
func (w *Worker) refreshParkedIfStale(ctx context.Context) {
	if w.parked.stale(w.cfg.Now(), w.cfg.Parking.Refresh) {
		w.loadParked(ctx)
	}
}

// armProbeWake makes the loop wake when the earliest probe is due.
func (w *Worker) armProbeWake() {
	at, ok := w.parked.nextProbe()
	if !ok {
		return
	}
	wake := w.cfg.Now().Add(at.Sub(w.clock.Now()))
	// A wake within a second of the one armed already is that one (the database clock's
	// offset moves the conversion a little between reads).
	if prev := w.parked.armed.Load(); prev != 0 && wake.Sub(time.Unix(0, prev)).Abs() < time.Second && wake.After(w.cfg.Now()) {
		return
	}
	w.parked.armed.Store(wake.UnixNano())
	w.pushPaced(wake)
}

// startProbes makes one held delivery due for each parked destination whose probe time
// has come (the store lets one instance do it): the claim that follows sends it.
func (w *Worker) startProbes(ctx context.Context) {
	if !w.parked.any.Load() {
		return
	}
	now := w.clock.Now()
	reread := false
	for _, d := range w.parked.probesDue(now) {
		id, err := w.cfg.Store.StartProbe(ctx, d.Key, now, w.cfg.Lease)
		if err != nil {
			w.log.Error("start probe of a parked destination", zap.String("destination", d.Key), zap.Error(err))
			continue
		}
		if id == uuid.Nil {
			// Another instance started it, or the store moved the probe time: this copy
			// is stale, and guessing the new time could overwrite a fresher read.
			reread = true
			continue
		}
		// What the store just wrote (storeflow.StartProbe).
		d.ProbeID, d.ProbeAt = id, now.Add(max(w.cfg.Lease, d.ProbeInterval))
		w.parked.put(d)
		w.log.Info("probing parked destination", zap.String("destination", d.Key),
			zap.String("delivery_id", id.String()))
	}
	if reread {
		w.loadParked(ctx)
	}
	w.armProbeWake()
}

// holdIfParked takes a claimed delivery whose destination is parked out of the send
// path: it is held (parked, its attempt given back) by a store write made on the send
// slot taken for it. It reports whether it did so.
func (w *Worker) holdIfParked(d Delivery) bool {
	if !w.parked.any.Load() {
		return false
	}
	dest := w.destination(d)
	p, ok := w.parked.get(dest.Key)
	if !ok || p.ProbeID == d.ID {
		return false
	}
	w.inflight.Add(1)
	go w.holdClaimed(d, dest)
	return true
}

func (w *Worker) holdClaimed(d Delivery, dest Destination) {
	err := w.hold(Hold{DeliveryID: d.ID, LeaseToken: d.LeaseToken, Key: dest.Key, Now: w.clock.Now()})
	if errors.Is(err, ErrNotParked) {
		// Unparked meanwhile, or this is a probe another instance started: send it.
		w.refreshParkedNow()
		w.process(d) // takes over the slot and the inflight count
		return
	}
	defer w.inflight.Done()
	defer w.releaseSlots(1)
	switch {
	case err == nil:
		if w.cfg.OnHold != nil {
			w.cfg.OnHold(d, dest)
		}
	case errors.Is(err, ErrLeaseLost):
		w.log.Warn("lease lost before holding a delivery of a parked destination", deliveryFields(d)...)
	default:
		// Nothing was written: the lease expires and the delivery is claimed again.
		w.log.Error("hold a delivery of a parked destination", append(deliveryFields(d), zap.Error(err))...)
	}
}

// destinationFailure is what a failed send means for its destination: nothing (the
// message's own failure: a bounce, a payload the receiver refuses; or a destination that
// works and asks to slow down: 429, Retry-After, which backoff and pacing serve), or a
// failure that counts towards parking, which parks at once when it is a permanent
// destination error.
func destinationFailure(sendErr error) (counts, parksNow bool, reason string) {
	perr := providers.Classify(sendErr)
	if perr.Class == providers.Permanent && !perr.Destination {
		return false, false, ""
	}
	if perr.Class != providers.Permanent && (perr.HTTPStatus == http.StatusTooManyRequests || perr.RetryAfter > 0) {
		return false, false, ""
	}
	if perr.Class == providers.Permanent {
		reason = "permanent"
		if perr.Code != "" {
			reason += " " + perr.Code
		}
		if perr.HTTPStatus != 0 {
			reason += fmt.Sprintf(" (HTTP %d)", perr.HTTPStatus)
		}
		return true, true, reason
	}
	return true, false, ""
}

// parkOnFailure decides, for a failed send, whether its destination is (or now becomes)
// parked, and if so holds the delivery with the attempt recorded and given back: a
// failure at a parked destination never spends a lead's budget, so it never goes dead
// for it. It reports whether it took care of the completion.
func (w *Worker) parkOnFailure(d Delivery, c Completion, sendErr error) bool {
	if w.cfg.Parking.Off && !w.parked.any.Load() {
		return false
	}
	counts, parksNow, reason := destinationFailure(sendErr)
	if !counts {
		return false
	}
	dest := w.destination(d)
	for try := 0; try < 2; try++ {
		p, parked := w.parked.get(dest.Key)
		if !parked {
			if w.cfg.Parking.Off {
				return false
			}
			if !parksNow && try == 0 { // counted once, however often this looks again
				reason = w.health.failed(dest.Key, c.Now)
			}
			if reason == "" {
				return false
			}
			if !w.park(dest, reason, false) {
				return false
			}
		}
		a := c.Attempt
		err := w.hold(Hold{DeliveryID: d.ID, LeaseToken: d.LeaseToken, Key: dest.Key,
			Now: c.Now, Attempt: &a, LastError: c.LastError, ProbeMax: w.cfg.Parking.ProbeMax})
		if errors.Is(err, ErrNotParked) {
			// Unparked by another instance since this copy was read: look again once.
			w.refreshParkedNow()
			continue
		}
		switch {
		case err == nil:
			if w.cfg.OnAttempt != nil {
				d.Status, d.LastError = DeliveryParked, c.LastError
				w.cfg.OnAttempt(d, a)
			}
			w.log.Info("delivery held: its destination is parked", append(deliveryFields(d),
				zap.String("destination", dest.Key), zap.String("error_code", a.ErrorCode),
				zap.Int("http_status", a.HTTPStatus))...)
			if w.cfg.OnHold != nil {
				w.cfg.OnHold(d, dest)
			}
			if p.ProbeID == d.ID {
				w.refreshParkedNow() // the failed probe moved the next probe
			}
		case errors.Is(err, ErrLeaseLost):
			w.log.Warn("lease lost before holding the attempt; another worker owns the delivery", deliveryFields(d)...)
		default:
			w.log.Error("hold a delivery of a parked destination; it is tried again when its lease expires",
				append(deliveryFields(d), zap.Error(err))...)
		}
		return true
	}
	return false
}

// park parks dest in the store and in the worker's copy. It reports whether dest is
// parked now (by this call or before it).
func (w *Worker) park(dest Destination, reason string, manual bool) bool {
	ctx, cancel := w.storeCtx()
	defer cancel()
	now := w.clock.Now()
	first := w.cfg.Parking.ProbeFirst
	fresh, err := w.cfg.Store.ParkDestination(ctx, Park{Destination: dest, Reason: reason, Manual: manual, By: "worker",
		Now: now, ProbeAt: now.Add(first), ProbeInterval: first})
	if err != nil {
		w.log.Error("park destination", zap.String("destination", dest.Key), zap.Error(err))
		return false
	}
	w.health.forget(dest.Key)
	if fresh {
		// Keys and labels carry no secret (destination.go); the reason is a class and code.
		w.log.Warn("destination parked: its deliveries wait until a probe gets through or an operator unparks it",
			zap.String("destination", dest.Key), zap.String("label", dest.Label), zap.String("reason", reason),
			zap.Duration("first_probe_in", first))
		if w.cfg.OnPark != nil {
			w.cfg.OnPark(dest, reason)
		}
	}
	w.refreshParked(ctx)
	return true
}

// afterSuccess counts a sent delivery for its destination and, when it was the probe of
// a parked destination, unparks it: every held delivery resumes, in created order.
func (w *Worker) afterSuccess(d Delivery) {
	tracking, anyParked := w.health.tracking(), w.parked.any.Load()
	if !tracking && !anyParked {
		return
	}
	dest := w.destination(d)
	if tracking {
		w.health.succeeded(dest.Key, w.clock.Now())
	}
	if !anyParked {
		return
	}
	if p, ok := w.parked.get(dest.Key); !ok || p.ProbeID != d.ID {
		return
	}
	ctx, cancel := w.storeCtx()
	defer cancel()
	n, err := w.cfg.Store.UnparkDestination(ctx, dest.Key, d.ID, "probe", w.clock.Now())
	switch {
	case err == nil:
		w.parked.drop(dest.Key)
		w.health.forget(dest.Key)
		w.log.Info("destination unparked: its probe got through", zap.String("destination", dest.Key),
			zap.Int("resumed", n))
		if w.cfg.OnUnpark != nil {
			w.cfg.OnUnpark(dest.Key, n)
		}
		w.Broadcast(ctx)
	case errors.Is(err, ErrNotParked):
		w.refreshParked(ctx)
	default:
		// The destination stays parked; the next probe tries again.
		w.log.Error("unpark destination after its probe", zap.String("destination", dest.Key), zap.Error(err))
	}
}

// ParkDestination parks a destination by hand (inbox, CLI, admin API): its deliveries
// are held as they come due, no probe runs, and only UnparkDestination resumes them.
func (w *Worker) ParkDestination(ctx context.Context, dest Destination, by string) (bool, error) {
	now := w.clock.Now()
	fresh, err := w.cfg.Store.ParkDestination(ctx, Park{Destination: dest, Reason: "manual", Manual: true, By: by, Now: now})
	if err != nil {
		return false, err
	}
	if fresh && w.cfg.OnPark != nil {
		w.cfg.OnPark(dest, "manual")
	}
	w.refreshParked(ctx)
	return fresh, nil
}

// UnparkDestination unparks key by hand and resumes its held deliveries in created
// order; it says how many. ErrNotParked when key is not parked.
func (w *Worker) UnparkDestination(ctx context.Context, key, by string) (int, error) {
	n, err := w.cfg.Store.UnparkDestination(ctx, key, uuid.Nil, by, w.clock.Now())
	if err != nil {
		return 0, err
	}
	w.parked.drop(key)
	w.health.forget(key)
	if w.cfg.OnUnpark != nil {
		w.cfg.OnUnpark(key, n)
	}
	w.Broadcast(ctx)
	return n, nil
}
