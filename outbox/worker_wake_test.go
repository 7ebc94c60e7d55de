package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

// TestWakeDeliversWithoutTheTick: with an hour-long tick, only the in-process wake-up
// can make the worker send a delivery committed after its first pass.
func TestWakeDeliversWithoutTheTick(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		p := fake.New("fake")
		onPass, passes := passSignal()
		w := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p), PollInterval: time.Hour, OnPass: onPass})
		awaitPass(t, passes)

		d := acceptOne(t, s)
		w.Wake()
		waitFor(t, 10*time.Second, "the woken worker to send", func() bool { return p.Delivered(d.ID.String()) == 1 })
	})
}

// TestBroadcastFromAnotherPoolWakesTheWorker: on PostgreSQL, a commit in another process
// (here: another pool) wakes this worker through LISTEN/NOTIFY.
func TestBroadcastFromAnotherPoolWakesTheWorker(t *testing.T) {
	cfg := storetest.NewPostgresSchema(t)
	s1 := storetest.OpenPostgresAt(t, cfg)
	s2 := storetest.OpenPostgresAt(t, cfg)
	p := fake.New("fake")
	onPass, passes := passSignal()
	startWorker(t, outbox.WorkerConfig{Store: s1, Sender: router(p), PollInterval: time.Hour,
		Notifications: true, OnPass: onPass})
	awaitPass(t, passes)

	d := acceptOne(t, s2)
	// The worker's LISTEN may not be in place yet when the first NOTIFY goes out; the
	// sender keeps announcing (debounced by the store) until the worker has sent.
	waitFor(t, 10*time.Second, "the notified worker to send", func() bool {
		s2.Broadcast(context.Background())
		return p.Delivered(d.ID.String()) == 1
	})
}

// TestWorkerBroadcastReachesOtherWorkers: Worker.Broadcast, with notifications on, wakes
// the worker of another pool. The broadcasting Worker is never started, so only the
// notified one can send.
func TestWorkerBroadcastReachesOtherWorkers(t *testing.T) {
	cfg := storetest.NewPostgresSchema(t)
	s1 := storetest.OpenPostgresAt(t, cfg)
	s2 := storetest.OpenPostgresAt(t, cfg)
	p := fake.New("fake")
	onPass, passes := passSignal()
	startWorker(t, outbox.WorkerConfig{Store: s1, Sender: router(p), PollInterval: time.Hour, Notifications: true, OnPass: onPass})
	awaitPass(t, passes)
	broadcaster := outbox.NewWorker(outbox.WorkerConfig{Store: s2, Sender: router(fake.New("unused")), Notifications: true})

	d := acceptOne(t, s2)
	waitFor(t, 10*time.Second, "the notified worker to send", func() bool {
		broadcaster.Broadcast(context.Background())
		return p.Delivered(d.ID.String()) == 1
	})
}

// TestTickDeliversWithNotificationsOff: nothing wakes the worker but its tick, and the
// tick alone delivers.
func TestTickDeliversWithNotificationsOff(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		p := fake.New("fake")
		onPass, passes := passSignal()
		startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p), PollInterval: time.Minute,
			Now: clock.Now, After: clock.After, ProcessClock: true, OnPass: onPass})
		awaitPass(t, passes)
		waitFor(t, 10*time.Second, "the worker to wait for its tick", func() bool { return clock.Waiters() == 1 })

		d := acceptOne(t, s)
		clock.Advance(time.Minute)
		if n := awaitPass(t, passes); n != 1 {
			t.Fatalf("the tick's pass claimed %d deliveries, want 1", n)
		}
		waitFor(t, 10*time.Second, "the tick to deliver", func() bool { return p.Delivered(d.ID.String()) == 1 })
	})
}
