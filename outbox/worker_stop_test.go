package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

// TestStopReleasesSendsThatOutliveTheGrace: a send still blocked when the grace runs out
// is cancelled and its lease given back without charging an attempt; another worker
// later sends the delivery.
func TestStopReleasesSendsThatOutliveTheGrace(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		d := acceptOne(t, s)
		cancelled := make(chan struct{})
		pa := fake.New("fake-a")
		pa.SetScript(func(ctx context.Context, m providers.Message) error {
			<-ctx.Done()
			close(cancelled)
			return &providers.Error{Class: providers.Ambiguous, Err: ctx.Err()}
		})
		a := outbox.NewWorker(outbox.WorkerConfig{Store: s, Sender: router(pa), PollInterval: time.Hour,
			ShutdownGrace: 50 * time.Millisecond})
		if err := a.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "A to be sending", func() bool { return pa.Calls(d.ID.String()) == 1 })
		if err := a.Stop(context.Background()); err != nil {
			t.Fatalf("stop: %v", err)
		}
		select {
		case <-cancelled:
		default:
			t.Fatal("Stop returned without cancelling the send that outlived the grace")
		}
		if a.Running() {
			t.Fatal("Running() after Stop")
		}

		got := getDelivery(t, s, d.ID)
		if got.Status != outbox.DeliveryPending || got.Attempts != 0 || got.LeaseToken != "" || !got.LockedUntil.IsZero() {
			t.Fatalf("after stop: status %s attempts %d token %q locked until %v, want pending, 0, no lease",
				got.Status, got.Attempts, got.LeaseToken, got.LockedUntil)
		}
		if as := listAttempts(t, s, d.ID); len(as) != 0 {
			t.Fatalf("attempts = %+v, want none charged", as)
		}

		pb := fake.New("fake-b")
		startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(pb), PollInterval: time.Hour})
		waitFor(t, 10*time.Second, "B to send", statusIs(t, s, d.ID, outbox.DeliverySent, 1))
		if as := listAttempts(t, s, d.ID); len(as) != 1 || as[0].Provider != "fake-b" || as[0].Attempt != 1 {
			t.Fatalf("attempts = %+v, want B's first attempt only", as)
		}
	})
}

// TestStopLetsInFlightSendsFinish: a send that ends within the grace is recorded
// normally, and no new work is claimed once Stop has begun.
func TestStopLetsInFlightSendsFinish(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		d := acceptOne(t, s)
		resume := make(chan struct{})
		p := fake.New("fake")
		p.SetScript(func(ctx context.Context, m providers.Message) error {
			select {
			case <-resume:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		w := outbox.NewWorker(outbox.WorkerConfig{Store: s, Sender: router(p), PollInterval: time.Hour, ShutdownGrace: time.Minute})
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the send to start", func() bool { return p.Calls(d.ID.String()) == 1 })
		stopped := make(chan error, 1)
		go func() { stopped <- w.Stop(context.Background()) }()
		waitFor(t, 10*time.Second, "the claim loop to stop", func() bool { return !w.Running() })

		// Work committed now is left for the next worker.
		later := acceptOne(t, s)
		w.Wake()
		close(resume)
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("stop: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Stop did not return after the in-flight send finished")
		}
		if got := getDelivery(t, s, d.ID); got.Status != outbox.DeliverySent {
			t.Fatalf("in-flight delivery is %s, want sent", got.Status)
		}
		if got := getDelivery(t, s, later.ID); got.Status != outbox.DeliveryPending || p.Calls(later.ID.String()) != 0 {
			t.Fatalf("a stopping worker picked up new work: %s", got.Status)
		}
		// Idempotent.
		if err := w.Stop(context.Background()); err != nil {
			t.Fatalf("second stop: %v", err)
		}
	})
}

// TestOverlappingWorkersDuringReload: a config reload starts the new worker before the
// old one stops; the two together still send each delivery once.
func TestOverlappingWorkersDuringReload(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		ds := acceptMany(t, s, 20, 10)
		p := fake.New("fake")
		old := outbox.NewWorker(outbox.WorkerConfig{Store: s, Sender: router(p), PollInterval: time.Hour})
		if err := old.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		next := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p), PollInterval: time.Hour})
		if err := old.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		next.Wake() // deliveries the old worker released (none expected) are due at once
		waitFor(t, 20*time.Second, "every delivery to be sent", func() bool { return p.TotalDelivered() == len(ds) })
		for _, d := range ds {
			if n := p.Calls(d.ID.String()); n != 1 {
				t.Fatalf("delivery %s handed to the provider %d times", d.ID, n)
			}
		}
		// And each send is recorded once: sent on the first attempt, whichever worker sent it.
		waitFor(t, 20*time.Second, "every delivery to be recorded sent", func() bool {
			for _, d := range ds {
				if !statusIs(t, s, d.ID, outbox.DeliverySent, 1)() {
					return false
				}
			}
			return true
		})
		for _, d := range ds {
			if as := listAttempts(t, s, d.ID); len(as) != 1 || as[0].Outcome != outbox.OutcomeSent {
				t.Fatalf("delivery %s: attempts %+v, want one sent attempt", d.ID, as)
			}
		}
	})
}

func TestWorkerLifecycle(t *testing.T) {
	s := storetest.OpenSQLite(t)
	w := outbox.NewWorker(outbox.WorkerConfig{Store: s, Sender: router(fake.New(""))})
	if w.Running() || !w.LastTick().IsZero() {
		t.Fatal("a new worker claims to be running")
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatalf("stop before start: %v", err)
	}
	if err := w.Start(context.Background()); err == nil {
		t.Fatal("a stopped worker restarted")
	}

	onPass, passes := passSignal()
	w = outbox.NewWorker(outbox.WorkerConfig{Store: s, Sender: router(fake.New("")), OnPass: onPass})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Health reads a zero LastTick as a worker that never polled: Start counts as the
	// first tick, before the loop's goroutine has run.
	if w.LastTick().IsZero() {
		t.Fatal("last tick zero right after Start: health would call the worker stuck")
	}
	if err := w.Start(context.Background()); err == nil {
		t.Fatal("started twice")
	}
	awaitPass(t, passes)
	if !w.Running() || w.LastTick().IsZero() {
		t.Fatalf("running %v last tick %v after the first pass", w.Running(), w.LastTick())
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.Running() {
		t.Fatal("running after stop")
	}

	if err := outbox.NewWorker(outbox.WorkerConfig{}).Start(context.Background()); err == nil {
		t.Fatal("a worker without store and sender started")
	}
}
