package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
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
	iv := ratelimit.Interval(2) // 500 ms and its headroom
	done := startWaits(t, b, clock, 3)
	if got := len(done); got != 1 {
		t.Fatalf("%d sends went at once, want 1 (a rate of 2/s spaces them %v apart)", got, iv)
	}
	<-done
	clock.Advance(iv - time.Millisecond)
	if got := len(done); got != 0 {
		t.Fatalf("a second send went %v after the first, want %v", iv-time.Millisecond, iv)
	}
	clock.Advance(time.Millisecond)
	waitLen(t, done, 1)
	<-done
	clock.Advance(iv)
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
	clock.Advance(ratelimit.Interval(1))
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
// refuses gets slots one interval apart, in the order refused, and keeps its slot: it is
// let through when it comes back at or after it (however late) once the key's last send
// is an interval old, refused if early, and a new send queues behind it. A key shared with a busy one (a Telegram bot across chats)
// is not pushed back by the busy key's queue.
func TestPacerSpreadsWhatItRefuses(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	iv := ratelimit.Interval(2) // 500 ms and its headroom
	slot := func(n int) time.Time { return t0.Add(time.Duration(n) * iv) }
	var p ratelimit.Pacer
	email := []ratelimit.Limit{{Key: "email", PerSecond: 2}}
	if ok, _ := p.Reserve("0", email, t0); !ok {
		t.Fatal("the first send was refused")
	}
	for i := 1; i <= 3; i++ {
		ok, at := p.Reserve(fmt.Sprint(i), email, t0)
		if want := slot(i); ok || !at.Equal(want) {
			t.Fatalf("send %d: %v, slot %v; want refused, slot %v", i, ok, at, want)
		}
	}
	if ok, _ := p.Reserve("1", email, slot(1)); !ok {
		t.Fatal("send 1 refused at its slot")
	}
	if ok, at := p.Reserve("4", email, slot(1)); ok || !at.Equal(slot(4)) {
		t.Fatalf("a new send at slot 1: %v, slot %v; want refused, behind the queue (slot 4)", ok, at)
	}
	if ok, at := p.Reserve("3", email, ms(1000)); ok || !at.Equal(slot(3)) {
		t.Fatalf("send 3 back early: %v, slot %v; want refused, its slot kept (slot 3)", ok, at)
	}
	if ok, _ := p.Reserve("2", email, ms(1300)); !ok {
		t.Fatal("send 2 refused when its claim came late")
	}
	// Send 3's slot has come, but send 2 went less than an interval ago: it waits until
	// the interval since send 2 is over, and a new send still queues behind the queue.
	if ok, at := p.Reserve("3", email, slot(3)); ok || !at.Equal(ms(1300).Add(iv)) {
		t.Fatalf("send 3 at its slot, %v after send 2: %v, slot %v; want refused, an interval after send 2", slot(3).Sub(ms(1300)), ok, at)
	}
	if ok, _ := p.Reserve("3", email, ms(1300).Add(iv)); !ok {
		t.Fatal("send 3 refused at its moved slot")
	}
	if ok, at := p.Reserve("6", email, ms(1300).Add(iv)); ok || !at.Equal(slot(5)) {
		t.Fatalf("a new send after send 3: %v, slot %v; want refused, behind send 4 (slot 5)", ok, at)
	}
	if ok, _ := p.Reserve("5", nil, t0); !ok {
		t.Fatal("a send with no limits was refused")
	}

	bot := ratelimit.Limit{Key: "bot", PerSecond: 30}
	chatA := []ratelimit.Limit{bot, {Key: "chat A", PerSecond: 1}}
	chatB := []ratelimit.Limit{bot, {Key: "chat B", PerSecond: 1}}
	if ok, _ := p.Reserve("a0", chatA, t0); !ok {
		t.Fatal("chat A's first send was refused")
	}
	for i := range 5 {
		if ok, _ := p.Reserve(fmt.Sprint("a", i+1), chatA, t0); ok {
			t.Fatal("chat A sent twice within its second")
		}
	}
	if ok, at := p.Reserve("b0", chatB, ms(100)); !ok {
		t.Fatalf("chat B refused (slot %v) behind chat A's queue on the shared bot", at)
	}
}
