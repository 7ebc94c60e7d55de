package outbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

const testLease = 2 * time.Minute

// TestCrashAfterClaim: a worker that claims and dies leaves a lease behind; once the lease
// has run out, another worker sends the delivery.
func TestCrashAfterClaim(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		d := acceptOne(t, s)
		claimed, err := s.Claim(ctxFor(t), outbox.ClaimParams{Owner: "crashed", Limit: 10, Lease: testLease, Now: clock.Now()})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim = %d rows, %v", len(claimed), err)
		}

		p := fake.New("fake")
		onPass, passes := passSignal()
		w := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p), Lease: testLease,
			PollInterval: time.Hour, Now: clock.Now, After: clock.After, ProcessClock: true, OnPass: onPass})
		if n := awaitPass(t, passes); n != 0 {
			t.Fatalf("the first pass claimed %d deliveries under a live lease", n)
		}

		clock.Advance(testLease + time.Second)
		w.Wake()
		waitFor(t, 10*time.Second, "the expired delivery to be sent", statusIs(t, s, d.ID, outbox.DeliverySent, 2))
		if n := p.Delivered(d.ID.String()); n != 1 {
			t.Fatalf("provider received it %d times", n)
		}
		as := listAttempts(t, s, d.ID)
		if len(as) != 1 || as[0].Attempt != 2 || as[0].Outcome != outbox.OutcomeSent || as[0].Provider != "fake" {
			t.Fatalf("attempts = %+v, want one: attempt 2 sent by fake (attempt 1 died with its worker)", as)
		}
	})
}

// TestFencingLateWritesAreRejected: A claims, its lease runs out, B reclaims and sends;
// whatever A writes afterwards is refused and the row keeps B's outcome.
func TestFencingLateWritesAreRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		d := acceptOne(t, s)
		a, err := s.Claim(ctxFor(t), outbox.ClaimParams{Owner: "worker-a", Limit: 1, Lease: testLease, Now: clock.Now()})
		if err != nil || len(a) != 1 {
			t.Fatalf("claim A = %d rows, %v", len(a), err)
		}
		clock.Advance(testLease + time.Second)

		p := fake.New("fake-b")
		startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p), Lease: testLease,
			PollInterval: time.Hour, Now: clock.Now, After: clock.After, ProcessClock: true})
		waitFor(t, 10*time.Second, "B to send", statusIs(t, s, d.ID, outbox.DeliverySent, 2))

		late := []outbox.Completion{
			{DeliveryID: d.ID, LeaseToken: a[0].LeaseToken, Status: outbox.DeliverySent, Provider: "fake-a",
				ProviderMessageID: "a-1", Now: clock.Now(),
				Attempt: outbox.Attempt{DeliveryID: d.ID, Attempt: 1, Provider: "fake-a", Outcome: outbox.OutcomeSent}},
			{DeliveryID: d.ID, LeaseToken: a[0].LeaseToken, Status: outbox.DeliveryFailed, LastError: "late",
				NextAttemptAt: clock.Now().Add(time.Hour), Now: clock.Now(),
				Attempt: outbox.Attempt{DeliveryID: d.ID, Attempt: 1, Outcome: outbox.OutcomeTemporary, Error: "late"}},
		}
		for _, c := range late {
			if err := outbox.CompleteOne(ctxFor(t), s, c); !errors.Is(err, outbox.ErrLeaseLost) {
				t.Fatalf("A's late %s write: err = %v, want ErrLeaseLost", c.Status, err)
			}
		}
		if err := s.Renew(ctxFor(t), d.ID, a[0].LeaseToken, clock.Now().Add(time.Hour)); !errors.Is(err, outbox.ErrLeaseLost) {
			t.Fatalf("A's late renew: err = %v, want ErrLeaseLost", err)
		}
		got := getDelivery(t, s, d.ID)
		if got.Status != outbox.DeliverySent || got.Provider != "fake-b" || got.ProviderMessageID != "fake-b-"+d.ID.String() || got.LastError != "" {
			t.Fatalf("row = status %s provider %q message %q error %q, want B's outcome", got.Status, got.Provider, got.ProviderMessageID, got.LastError)
		}
		if as := listAttempts(t, s, d.ID); len(as) != 1 || as[0].Provider != "fake-b" {
			t.Fatalf("attempts = %+v, want only B's", as)
		}
	})
}

// TestFencingPausedWorker: a Worker whose send outlives its lease (by its own clock it
// never renewed in time) finds the delivery taken over, and records nothing.
func TestFencingPausedWorker(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clockA := newClock()
		d := acceptOne(t, s)

		resume := make(chan struct{})
		pa := fake.New("fake-a")
		pa.SetScript(func(ctx context.Context, m providers.Message) error {
			<-resume
			return nil // A's send "succeeds", too late
		})
		a := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(pa), Lease: testLease,
			PollInterval: time.Hour, Now: clockA.Now, After: clockA.After, ProcessClock: true, ShutdownGrace: time.Minute})
		waitFor(t, 10*time.Second, "A to be sending", func() bool { return pa.Calls(d.ID.String()) == 1 })

		clockB := outbox.NewManualClock(clockA.Now().Add(testLease + time.Second))
		pb := fake.New("fake-b")
		startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(pb), Lease: testLease,
			PollInterval: time.Hour, Now: clockB.Now, After: clockB.After, ProcessClock: true})
		waitFor(t, 10*time.Second, "B to send", statusIs(t, s, d.ID, outbox.DeliverySent, 2))

		close(resume)
		if err := a.Stop(context.Background()); err != nil { // waits for A's write attempt
			t.Fatal(err)
		}
		got := getDelivery(t, s, d.ID)
		if got.Status != outbox.DeliverySent || got.Provider != "fake-b" {
			t.Fatalf("row = %s by %q, want sent by fake-b", got.Status, got.Provider)
		}
		if as := listAttempts(t, s, d.ID); len(as) != 1 || as[0].Provider != "fake-b" {
			t.Fatalf("attempts = %+v, want only B's", as)
		}
	})
}

// TestLeaseRenewedWhileSending: a slow send keeps its delivery because the worker renews
// the lease every third of it; nobody else can claim it meanwhile.
func TestLeaseRenewedWhileSending(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		start := clock.Now()
		d := acceptOne(t, s)
		resume := make(chan struct{})
		p := fake.New("fake")
		p.SetScript(func(ctx context.Context, m providers.Message) error {
			<-resume
			return nil
		})
		lease := 90 * time.Second
		startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p), Lease: lease,
			PollInterval: time.Hour, Now: clock.Now, After: clock.After, ProcessClock: true})
		waitFor(t, 10*time.Second, "the send to start", func() bool { return p.Calls(d.ID.String()) == 1 })
		// Two waiters: the tick and the renewal timer of the running send.
		waitFor(t, 10*time.Second, "the renewal timer", func() bool { return clock.Waiters() == 2 })

		clock.Advance(lease/3 + time.Second)
		want := start.Add(lease/3 + time.Second + lease)
		waitFor(t, 10*time.Second, "the lease to be renewed", func() bool {
			return getDelivery(t, s, d.ID).LockedUntil.Equal(want)
		})
		// Past the original lease, the renewed one still holds.
		got, err := s.Claim(ctxFor(t), outbox.ClaimParams{Owner: "other", Limit: 1, Lease: lease, Now: start.Add(lease + time.Second)})
		if err != nil || len(got) != 0 {
			t.Fatalf("another worker claimed %d rows (err %v) of a renewed lease", len(got), err)
		}
		close(resume)
		waitFor(t, 10*time.Second, "the send to be recorded", statusIs(t, s, d.ID, outbox.DeliverySent, 1))
	})
}

// TestLeaseLostDuringRenewCancelsTheSend: when a renewal finds the lease gone, the worker
// abandons the send and writes nothing.
func TestLeaseLostDuringRenewCancelsTheSend(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		d := acceptOne(t, s)
		cancelled := make(chan struct{})
		p := fake.New("fake")
		p.SetScript(func(ctx context.Context, m providers.Message) error {
			<-ctx.Done()
			close(cancelled)
			return &providers.Error{Class: providers.Ambiguous, Err: ctx.Err()}
		})
		cs := &countingStore{Store: s}
		w := startWorker(t, outbox.WorkerConfig{Store: cs, Sender: router(p), Lease: testLease,
			PollInterval: time.Hour, Now: clock.Now, After: clock.After, ProcessClock: true})
		waitFor(t, 10*time.Second, "the send to start", func() bool { return p.Calls(d.ID.String()) == 1 })
		waitFor(t, 10*time.Second, "the renewal timer", func() bool { return clock.Waiters() == 2 })

		// Another worker steals the delivery as if this one had paused past its lease.
		stolen, err := s.Claim(ctxFor(t), outbox.ClaimParams{Owner: "thief", Limit: 1, Lease: time.Hour, Now: clock.Now().Add(testLease + time.Second)})
		if err != nil || len(stolen) != 1 {
			t.Fatalf("steal = %d rows, %v", len(stolen), err)
		}
		clock.Advance(testLease/3 + time.Second)
		select {
		case <-cancelled:
		case <-time.After(10 * time.Second):
			t.Fatal("the send was not cancelled after the lease was lost")
		}
		if err := w.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := getDelivery(t, s, d.ID)
		if got.Status != outbox.DeliverySending || got.LeaseToken != stolen[0].LeaseToken || got.LeaseOwner != "thief" {
			t.Fatalf("row = %s owner %q, want still sending under the thief's lease", got.Status, got.LeaseOwner)
		}
		if as := listAttempts(t, s, d.ID); len(as) != 0 {
			t.Fatalf("attempts = %+v, want none written by the worker that lost its lease", as)
		}
		// The worker knew: it did not even try to record the attempt (the store's fence
		// would have refused it, which the checks above could not tell apart).
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if len(cs.batchSizes) != 0 {
			t.Fatalf("the worker tried to record completions %v after its renewal found the lease lost", cs.batchSizes)
		}
	})
}
