package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
	"github.com/formoutbox/caddy-form-outbox/providers/ratelimit"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]float64{"14/s": 14, "2/s": 2, "0.5/s": 0.5, "120/m": 2, "off": 0} {
		got, err := ratelimit.Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "14", "14/h", "0/s", "-1/s", "x/s", "14 /s"} {
		if _, err := ratelimit.Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

// startWaits starts n Waits and returns a channel that receives the index of each as it
// returns, once all n wait on the clock or have returned.
func startWaits(t *testing.T, b *ratelimit.Bucket, clock *outbox.ManualClock, n int) chan int {
	t.Helper()
	done := make(chan int, n)
	for i := range n {
		go func() {
			if err := b.Wait(context.Background()); err != nil {
				t.Errorf("wait %d: %v", i, err)
			}
			done <- i
		}()
	}
	poll(t, "the waits to reach the clock", func() bool { return clock.Waiters()+len(done) >= n })
	return done
}

func TestBucketSpacesSendsByTheRate(t *testing.T) {
	clock := outbox.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := ratelimit.NewBucket(2, clock.Now, clock.After)
	done := startWaits(t, b, clock, 3)
	if got := len(done); got != 1 {
		t.Fatalf("%d sends went at once, want 1 (a rate of 2/s spaces them 500ms apart)", got)
	}
	<-done
	clock.Advance(499 * time.Millisecond)
	if got := len(done); got != 0 {
		t.Fatalf("a second send went %v after the first, want 500ms", 499*time.Millisecond)
	}
	clock.Advance(time.Millisecond)
	waitLen(t, done, 1)
	<-done
	clock.Advance(500 * time.Millisecond)
	waitLen(t, done, 1)
}

func waitLen(t *testing.T, ch chan int, n int) {
	t.Helper()
	poll(t, "a wait to return", func() bool { return len(ch) >= n })
}

// poll checks cond every millisecond until it holds, failing t after ten seconds.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

func TestSendCutShortWhileWaitingIsTemporaryAndNotSent(t *testing.T) {
	clock := outbox.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := fake.New("ses")
	p := &ratelimit.Provider{Next: f, Bucket: ratelimit.NewBucket(1, clock.Now, clock.After)}
	if _, err := p.Send(context.Background(), providers.Message{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Send(ctx, providers.Message{ID: "b"})
	var perr *providers.Error
	if !errors.As(err, &perr) || perr.Class != providers.Temporary {
		t.Fatalf("send cut short while waiting: %v, want a temporary error", err)
	}
	if f.Calls("b") != 0 {
		t.Errorf("the cut-short send reached the provider")
	}
	// The slot it gave back goes to the next send, one interval after the first (the
	// abandoned wait still counts among the clock's waiters).
	done := make(chan error, 1)
	go func() { _, err := p.Send(context.Background(), providers.Message{ID: "c"}); done <- err }()
	poll(t, "the next send to wait", func() bool { return clock.Waiters() == 2 })
	clock.Advance(time.Second)
	if err := <-done; err != nil || f.Delivered("c") != 1 {
		t.Fatalf("next send: %v, delivered %d", err, f.Delivered("c"))
	}
}

// A Wait whose ctx had already ended when its slot came up sends nothing, so it hands
// the slot back: the next Wait goes at once instead of one interval later.
func TestEndedWaitHandsBackAFreeSlot(t *testing.T) {
	clock := outbox.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := ratelimit.NewBucket(1, clock.Now, clock.After)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with an ended ctx: %v, want context.Canceled", err)
	}
	done := startWaits(t, b, clock, 1)
	if got := len(done); got != 1 {
		t.Fatal("the next send waited for the slot an ended wait never used")
	}
}

// TestPacerSpreadsWhatItRefuses: a Pacer takes a key's slot when it is free; what it
// refuses comes back one interval apart, in the order refused, after the ones refused
// before; a key shared with a busy one (a Telegram bot across chats) is not pushed back
// by the busy key's queue.
func TestPacerSpreadsWhatItRefuses(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p ratelimit.Pacer
	email := []ratelimit.Limit{{Key: "email", PerSecond: 2}}
	if ok, _ := p.Reserve(email, t0); !ok {
		t.Fatal("the first send was refused")
	}
	for i := 1; i <= 3; i++ {
		ok, at := p.Reserve(email, t0)
		if want := t0.Add(time.Duration(i) * 500 * time.Millisecond); ok || !at.Equal(want) {
			t.Fatalf("send %d: %v, retry at %v; want refused, retry at %v", i, ok, at, want)
		}
	}
	// At the first retry time its slot is free, and only one slot is.
	if ok, _ := p.Reserve(email, t0.Add(500*time.Millisecond)); !ok {
		t.Fatal("the first deferred send was refused at its time")
	}
	if ok, at := p.Reserve(email, t0.Add(500*time.Millisecond)); ok || !at.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("a new send at 0.5s: %v, retry at %v; want refused, after the deferrals (2s)", ok, at)
	}
	if ok, _ := p.Reserve(nil, t0); !ok {
		t.Fatal("a send with no limits was refused")
	}

	bot := ratelimit.Limit{Key: "bot", PerSecond: 30}
	chatA := []ratelimit.Limit{bot, {Key: "chat A", PerSecond: 1}}
	chatB := []ratelimit.Limit{bot, {Key: "chat B", PerSecond: 1}}
	if ok, _ := p.Reserve(chatA, t0); !ok {
		t.Fatal("chat A's first send was refused")
	}
	for range 5 {
		if ok, _ := p.Reserve(chatA, t0); ok {
			t.Fatal("chat A sent twice within its second")
		}
	}
	later := t0.Add(100 * time.Millisecond)
	if ok, at := p.Reserve(chatB, later); !ok {
		t.Fatalf("chat B refused (retry at %v) behind chat A's queue on the shared bot", at)
	}
}
