package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

// forEachStore runs fn against a fresh store of every implementation, the stores side
// by side: each has its own file or schema, clock and provider, so they share nothing.
func forEachStore(t *testing.T, fn func(t *testing.T, s outbox.Store)) {
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

// waitFor polls cond until it holds, failing t after timeout. It is the only way these
// tests wait for the worker's goroutines: no sleeps.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newClock starts a manual clock a minute ahead of real time, so deliveries that
// storetest makes due "now" are already due by it.
func newClock() *outbox.ManualClock {
	return outbox.NewManualClock(time.Now().UTC().Add(time.Minute).Truncate(time.Millisecond))
}

// acceptOne stores a submission with one email delivery and returns the delivery.
func acceptOne(t testing.TB, s outbox.Store, opts ...func(*outbox.Delivery)) outbox.Delivery {
	t.Helper()
	sub := storetest.NewSubmission("contact")
	d := storetest.NewDelivery(sub, "email", "sales@example.com")
	for _, o := range opts {
		o(&d)
	}
	storetest.MustAccept(t, s, sub, d)
	return d
}

// acceptMany stores subs submissions of perSub email deliveries each.
func acceptMany(t testing.TB, s outbox.Store, subs, perSub int) []outbox.Delivery {
	t.Helper()
	var all []outbox.Delivery
	for range subs {
		sub := storetest.NewSubmission("contact")
		ds := make([]outbox.Delivery, perSub)
		for j := range ds {
			ds[j] = storetest.NewDelivery(sub, "email", fmt.Sprintf("r%d@example.com", j))
		}
		storetest.MustAccept(t, s, sub, ds...)
		all = append(all, ds...)
	}
	return all
}

func getDelivery(t testing.TB, s outbox.Store, id uuid.UUID) outbox.Delivery {
	t.Helper()
	d, err := s.GetDelivery(ctxFor(t), id)
	if err != nil {
		t.Fatalf("get delivery %s: %v", id, err)
	}
	return *d
}

func listAttempts(t testing.TB, s outbox.Store, id uuid.UUID) []outbox.Attempt {
	t.Helper()
	as, err := s.ListAttempts(ctxFor(t), id)
	if err != nil {
		t.Fatalf("list attempts of %s: %v", id, err)
	}
	return as
}

// statusIs is a waitFor condition: the delivery has this status and attempt count.
func statusIs(t testing.TB, s outbox.Store, id uuid.UUID, status outbox.DeliveryStatus, attempts int) func() bool {
	return func() bool {
		d := getDelivery(t, s, id)
		return d.Status == status && d.Attempts == attempts
	}
}

// passSignal returns an OnPass hook and the channel it reports on.
func passSignal() (func(int), chan int) {
	ch := make(chan int, 1000)
	return func(n int) {
		select {
		case ch <- n:
		default:
		}
	}, ch
}

func awaitPass(t testing.TB, passes chan int) int {
	t.Helper()
	select {
	case n := <-passes:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a worker pass")
		return 0
	}
}

// startWorker starts a Worker sending through p, stopped at cleanup.
func startWorker(t testing.TB, cfg outbox.WorkerConfig) *outbox.Worker {
	t.Helper()
	w := outbox.NewWorker(cfg)
	if err := w.Start(context.Background()); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("stop worker: %v", err)
		}
	})
	return w
}

func router(p *fake.Provider) outbox.Router { return outbox.Router{Email: p, Webhook: p} }

// observedLogger records log entries so tests can check what an operator would read,
// and that no visitor address ever reaches it.
func observedLogger() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

func assertNoAddressesLogged(t testing.TB, logs *observer.ObservedLogs) {
	t.Helper()
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		if strings.Contains(line, "@example.com") {
			t.Errorf("a log line carries an address: %s", line)
		}
	}
}
