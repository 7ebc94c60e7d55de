package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// recordsPerSlot is how many outcomes per send slot may wait for their write. With one
// per slot, a completion write in progress held as many outcomes as there are slots, so
// sends that returned meanwhile kept their slots and the next claim waited for that
// commit; with four, claims and completion writes overlap (burn-down with one completion
// writer: 11,200 -> 14,200 deliveries/s). The leases of waiting outcomes run on; the
// write is milliseconds, the lease minutes.
const recordsPerSlot = 4

// process sends one claimed delivery and records what happened. It owns one send slot,
// given back as soon as the send returned: recording the outcome is a store write that
// waits for company (completebatch.go), and the next claim need not wait for it. A
// record slot, taken before the send slot is given back, bounds the outcomes waiting to
// be written to recordsPerSlot x Concurrency, so a slow store slows the sends down
// instead of piling up.
func (w *Worker) process(d Delivery) {
	defer w.inflight.Done()

	ctx, cancel := context.WithCancel(w.sendCtx)
	defer cancel()

	var lost atomic.Bool
	renewDone := make(chan struct{})
	go w.renew(ctx, d, &lost, cancel, renewDone)

	started := w.clock.Now()
	res, err := w.send(ctx, d)
	finished := w.clock.Now()
	cancel() // the send is over: ends the renewals
	<-renewDone
	w.records <- struct{}{}
	defer func() { <-w.records }()
	w.releaseSlots(1)

	if lost.Load() {
		// Another worker owns the delivery now; whatever this send did, the row is theirs.
		return
	}
	if err != nil && w.aborted.Load() && w.sendCtx.Err() != nil {
		w.release(d)
		return
	}
	w.complete(d, res, err, started, finished)
}

// send calls the Sender, turning a panic into a temporary error: one broken provider
// must not take the server down, and the delivery is retried after a fix.
func (w *Worker) send(ctx context.Context, d Delivery) (res providers.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res = providers.Result{}
			err = &providers.Error{Class: providers.Temporary, Code: "panic", Err: fmt.Errorf("sender panicked: %v", r)}
		}
	}()
	return w.cfg.Sender.Send(ctx, d)
}

// renew extends the lease every third of its length while the send runs (until ctx, the
// send's context, ends), so a slow but healthy send keeps its delivery; if the lease
// turns out to be lost, it cancels the send.
func (w *Worker) renew(ctx context.Context, d Delivery, lost *atomic.Bool, cancelSend context.CancelFunc, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.cfg.After(w.cfg.Lease / 3):
		}
		sctx, cancel := w.storeCtx()
		err := w.cfg.Store.Renew(sctx, d.ID, d.LeaseToken, w.clock.Now().Add(w.cfg.Lease))
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, ErrLeaseLost):
			lost.Store(true)
			cancelSend()
			w.log.Warn("lease lost while sending; abandoning the delivery to its new owner", deliveryFields(d)...)
			return
		default:
			// A database blip: the lease still has two thirds to run, try again then.
			w.log.Warn("renew lease", append(deliveryFields(d), zap.Error(err))...)
		}
	}
}

// release gives the lease back after a send was cut short by shutdown: the attempt never
// really happened, so it is not charged.
func (w *Worker) release(d Delivery) {
	ctx, cancel := w.storeCtx()
	defer cancel()
	err := w.cfg.Store.Release(ctx, d.ID, d.LeaseToken, w.clock.Now())
	switch {
	case err == nil:
		w.log.Info("released lease of a send cancelled at shutdown", deliveryFields(d)...)
	case errors.Is(err, ErrLeaseLost):
		w.log.Warn("lease lost before release", deliveryFields(d)...)
	default:
		w.log.Error("release lease; the delivery is retried when the lease expires",
			append(deliveryFields(d), zap.Error(err))...)
	}
}

// complete records the attempt and the delivery's next state in one fenced write.
func (w *Worker) complete(d Delivery, res providers.Result, sendErr error, started, finished time.Time) {
	c := w.completion(d, res, sendErr, started, finished)
	if sendErr != nil && w.parkOnFailure(d, c, sendErr) {
		return
	}
	ctx, cancel := w.storeCtx()
	err := w.recordCompletion(ctx, c)
	cancel()
	// The fields are built only for a line that is written: a sent delivery logs at
	// Debug, which is usually off, and this runs once per delivery.
	fields := func(more ...zap.Field) []zap.Field {
		return append(append(deliveryFields(d), zap.String("outcome", string(c.Attempt.Outcome))), more...)
	}
	switch {
	case err == nil:
	case errors.Is(err, ErrLeaseLost):
		w.log.Warn("lease lost before recording the attempt; another worker owns the delivery", fields()...)
		return
	default:
		// Nothing was recorded; the lease expires and the delivery is tried again, which
		// may send it twice (at-least-once) but never loses it.
		w.log.Error("record attempt", fields(zap.Error(err))...)
		return
	}
	d.Status = c.Status
	d.LastError = c.LastError
	if c.Status == DeliveryFailed {
		d.NextAttemptAt = c.NextAttemptAt
	}
	if c.Provider != "" {
		d.Provider = c.Provider
	}
	if c.Status == DeliverySent {
		d.ProviderMessageID = c.ProviderMessageID
		d.SentAt = c.Now
	}
	if w.cfg.OnAttempt != nil {
		w.cfg.OnAttempt(d, c.Attempt)
	}
	if c.Status == DeliverySent {
		w.afterSuccess(d)
	}
	switch c.Status {
	case DeliverySent:
		if ce := w.log.Check(zap.DebugLevel, "delivery sent"); ce != nil {
			ce.Write(fields(zap.String("provider", c.Provider))...)
		}
	case DeliveryFailed:
		w.log.Info("delivery attempt failed; retry scheduled", fields(
			zap.String("provider", c.Provider),
			zap.String("error_code", c.Attempt.ErrorCode),
			zap.Int("http_status", c.Attempt.HTTPStatus),
			zap.Time("next_attempt_at", c.NextAttemptAt))...)
	case DeliveryDead:
		// Error text may quote the recipient; the log keeps to ids and classes, the
		// attempts table has the rest.
		w.log.Error("delivery dead", fields(
			zap.String("provider", c.Provider),
			zap.String("error_code", c.Attempt.ErrorCode),
			zap.Int("http_status", c.Attempt.HTTPStatus),
			zap.Int("max_attempts", maxAttempts(d)))...)
		if w.cfg.OnDead != nil {
			w.cfg.OnDead(d)
		}
	}
}

// completion decides the delivery's next state from one send's outcome: sent; failed
// with a backoff (temporary and ambiguous: at-least-once); or dead (permanent, or the
// attempt budget is spent), with a delivery.dead event in the same write.
func (w *Worker) completion(d Delivery, res providers.Result, sendErr error, started, finished time.Time) Completion {
	c := Completion{
		DeliveryID:        d.ID,
		LeaseToken:        d.LeaseToken,
		Provider:          res.Provider,
		ProviderMessageID: res.MessageID,
		Now:               finished,
		Attempt: Attempt{
			DeliveryID:        d.ID,
			Attempt:           d.Attempts,
			Provider:          res.Provider,
			StartedAt:         started,
			FinishedAt:        finished,
			ProviderMessageID: res.MessageID,
			BodySHA256:        res.BodySHA256,
		},
	}
	if sendErr == nil {
		c.Status = DeliverySent
		c.Attempt.Outcome = OutcomeSent
		return c
	}
	perr := providers.Classify(sendErr)
	c.LastError = truncate(sendErr.Error(), maxErrorText)
	c.Attempt.Error = c.LastError
	c.Attempt.HTTPStatus = perr.HTTPStatus
	c.Attempt.ErrorCode = perr.Code
	switch perr.Class {
	case providers.Permanent:
		c.Attempt.Outcome = OutcomePermanent
		c.Status = DeliveryDead
	case providers.Ambiguous:
		c.Attempt.Outcome = OutcomeAmbiguous
	default:
		c.Attempt.Outcome = OutcomeTemporary
	}
	if c.Status == "" {
		if d.Attempts >= maxAttempts(d) {
			c.Status = DeliveryDead
		} else {
			c.Status = DeliveryFailed
			c.NextAttemptAt = finished.Add(w.cfg.Retry.Next(d.Attempts, perr, nil))
		}
	}
	if c.Status == DeliveryDead {
		data, _ := json.Marshal(deadEventData{
			Route:       d.Route,
			Channel:     d.Channel,
			Attempts:    d.Attempts,
			MaxAttempts: maxAttempts(d),
			Outcome:     c.Attempt.Outcome,
			Provider:    c.Provider,
			ErrorCode:   perr.Code,
			HTTPStatus:  perr.HTTPStatus,
		})
		c.Event = &Event{
			Kind:         EventDeliveryDead,
			SubmissionID: d.SubmissionID,
			DeliveryID:   d.ID,
			Data:         data,
			At:           finished,
		}
	}
	return c
}

// deadEventData is the delivery.dead event's payload: identifiers and classes only, so
// the event can be forwarded (Caddy events, logs) without leaking visitor data.
type deadEventData struct {
	Route       string  `json:"route"`
	Channel     Channel `json:"channel"`
	Attempts    int     `json:"attempts"`
	MaxAttempts int     `json:"max_attempts"`
	Outcome     Outcome `json:"outcome"`
	Provider    string  `json:"provider,omitempty"`
	ErrorCode   string  `json:"error_code,omitempty"`
	HTTPStatus  int     `json:"http_status,omitempty"`
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary so the stored text stays valid UTF-8.
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
