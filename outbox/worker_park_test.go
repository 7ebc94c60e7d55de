package outbox_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

const parkHookURL = "https://hooks.example.com/in/secret-token"

var errGone = &providers.Error{Class: providers.Permanent, Destination: true, Code: "gone", HTTPStatus: 410,
	Err: errors.New("webhook receiver says the endpoint is gone")}

// acceptHook stores one submission with one webhook delivery.
func acceptHook(t testing.TB, s outbox.Store) outbox.Delivery {
	t.Helper()
	sub := storetest.NewSubmission("contact")
	d := storetest.NewDelivery(sub, "hook", parkHookURL)
	storetest.MustAccept(t, s, sub, d)
	return d
}

// switchable is a fake provider whose failure can be switched off, recording the order
// in which messages got through.
type switchable struct {
	*fake.Provider
	mu   sync.Mutex
	err  error
	sent []string
}

func newSwitchable(err error) *switchable {
	p := &switchable{Provider: fake.New("webhook"), err: err}
	p.Fail(func(m providers.Message) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.err == nil {
			p.sent = append(p.sent, m.ID)
		}
		return p.err
	})
	return p
}

func (p *switchable) set(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

func (p *switchable) order() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.sent...)
}

func parkedList(t testing.TB, s outbox.Store) []outbox.ParkedDestination {
	t.Helper()
	list, err := s.ListParkedDestinations(ctxFor(t))
	if err != nil {
		t.Fatalf("list parked destinations: %v", err)
	}
	return list
}

// TestPermanentDestinationErrorParksAtOnce: a 410 parks the webhook at its first lead,
// which is held with its one attempt recorded and given back; the leads after it are
// held when claimed, never sent, their attempts unspent.
func TestPermanentDestinationErrorParksAtOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		p := newSwitchable(errGone)
		parked := make(chan outbox.Destination, 4)
		w := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p.Provider), PollInterval: time.Hour,
			Now: clock.Now, After: clock.After, ProcessClock: true,
			OnPark: func(d outbox.Destination, _ string) { parked <- d }})
		first := acceptHook(t, s)
		w.Wake()
		waitFor(t, 10*time.Second, "the first lead held", statusIs(t, s, first.ID, outbox.DeliveryParked, 0))
		if as := listAttempts(t, s, first.ID); len(as) != 1 || as[0].HTTPStatus != 410 || as[0].Outcome != outbox.OutcomePermanent {
			t.Fatalf("first lead's history %+v, want its one 410", as)
		}
		select {
		case d := <-parked:
			if d.Key != outbox.DestinationOf(first, "").Key {
				t.Errorf("parked %q, want the webhook's key", d.Key)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("OnPark was not called")
		}
		var next []outbox.Delivery
		for range 3 {
			next = append(next, acceptHook(t, s))
		}
		w.Wake()
		for _, d := range next {
			waitFor(t, 10*time.Second, "a later lead held", statusIs(t, s, d.ID, outbox.DeliveryParked, 0))
			if as := listAttempts(t, s, d.ID); len(as) != 0 {
				t.Errorf("held lead has %d attempts, want none", len(as))
			}
		}
		if n := p.TotalCalls(); n != 1 {
			t.Errorf("the webhook was called %d times, want once", n)
		}
		if list := parkedList(t, s); len(list) != 1 || list[0].Held != 4 || list[0].Leads != 4 || list[0].Reason != "permanent gone (HTTP 410)" {
			t.Errorf("parked list %+v", list)
		}
	})
}

// TestConsecutiveFailuresPark: temporary failures park the destination after After of
// them in a row; the delivery whose failure parked it keeps the attempts spent before.
func TestConsecutiveFailuresPark(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		p := newSwitchable(&providers.Error{Class: providers.Temporary, HTTPStatus: 503, Err: errors.New("unavailable")})
		w := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p.Provider), PollInterval: time.Hour,
			Now: clock.Now, After: clock.After, ProcessClock: true,
			Retry:   outbox.RetryPolicy{Base: 30 * time.Second, MaxDelay: time.Hour},
			Parking: outbox.ParkPolicy{After: 3}})
		d := acceptHook(t, s)
		w.Wake()
		for attempt := 1; attempt <= 2; attempt++ {
			waitFor(t, 10*time.Second, "a failed attempt", statusIs(t, s, d.ID, outbox.DeliveryFailed, attempt))
			if list := parkedList(t, s); len(list) != 0 {
				t.Fatalf("parked after %d failures: %+v", attempt, list)
			}
			clock.Set(getDelivery(t, s, d.ID).NextAttemptAt)
			w.Wake()
		}
		waitFor(t, 10*time.Second, "the third failure to park", statusIs(t, s, d.ID, outbox.DeliveryParked, 2))
		if as := listAttempts(t, s, d.ID); len(as) != 3 {
			t.Errorf("%d attempts recorded, want 3", len(as))
		}
		if list := parkedList(t, s); len(list) != 1 || list[0].Reason != "3 consecutive failures" {
			t.Errorf("parked list %+v", list)
		}
	})
}

// TestProbeBacksOffThenResumesAllInOrder: one probe (the oldest held lead) tries at 1m,
// then 2m, then 4m after each failure, its attempts given back each time; when it gets
// through, every held lead is sent, in the order the leads came, each on its first
// charged attempt.
func TestProbeBacksOffThenResumesAllInOrder(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		p := newSwitchable(errGone)
		unparked := make(chan int, 1)
		logger, logs := observedLogger()
		t.Cleanup(func() {
			if t.Failed() {
				for _, e := range logs.All() {
					t.Logf("%s %v", e.Message, e.ContextMap())
				}
			}
		})
		w := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p.Provider), PollInterval: time.Hour, Logger: logger,
			Concurrency: 1, Now: clock.Now, After: clock.After, ProcessClock: true,
			Parking:  outbox.ParkPolicy{ProbeFirst: time.Minute, ProbeMax: 4 * time.Minute},
			OnUnpark: func(_ string, n int) { unparked <- n }})
		leads := []outbox.Delivery{acceptHook(t, s)}
		w.Wake()
		waitFor(t, 10*time.Second, "the first lead held", statusIs(t, s, leads[0].ID, outbox.DeliveryParked, 0))
		for range 4 {
			leads = append(leads, acceptHook(t, s))
		}
		w.Wake()
		for _, d := range leads[1:] {
			waitFor(t, 10*time.Second, "a later lead held", statusIs(t, s, d.ID, outbox.DeliveryParked, 0))
		}

		// Each failed probe doubles the wait, up to ProbeMax; the probe is the oldest lead.
		wait := time.Minute
		for probe := 1; probe <= 3; probe++ {
			list := parkedList(t, s)
			if len(list) != 1 || list[0].ProbeInterval != wait {
				t.Fatalf("before probe %d: %+v, want the probe %v away", probe, list, wait)
			}
			if early := list[0].ProbeAt.Add(-time.Second); clock.Now().Before(early) {
				clock.Set(early)
				w.Wake()
				awaitIdle(t, s, leads)
				if n := p.TotalCalls(); n != probe {
					t.Fatalf("probe %d ran before its time (%d calls)", probe, n)
				}
			}
			if probe == 3 {
				p.set(nil) // the receiver is back
			}
			// The worker wakes itself for the probe: no Wake here.
			clock.Set(list[0].ProbeAt)
			if probe < 3 {
				waitFor(t, 10*time.Second, "the probe to fail", func() bool { return len(listAttempts(t, s, leads[0].ID)) == probe+1 })
				waitFor(t, 10*time.Second, "the probe held again", statusIs(t, s, leads[0].ID, outbox.DeliveryParked, 0))
				wait = min(2*wait, 4*time.Minute)
			}
		}
		select {
		case n := <-unparked:
			if n != len(leads)-1 {
				t.Errorf("resumed %d, want %d", n, len(leads)-1)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not unparked after the probe got through")
		}
		for _, d := range leads {
			waitFor(t, 10*time.Second, "every lead sent", statusIs(t, s, d.ID, outbox.DeliverySent, 1))
		}
		var want []string
		for _, d := range leads {
			want = append(want, d.ID.String())
		}
		if got := p.order(); !equalStrings(got, want) {
			t.Errorf("sent in order %v, want the leads' order %v", got, want)
		}
		if list := parkedList(t, s); len(list) != 0 {
			t.Errorf("still parked: %+v", list)
		}
	})
}

// TestManualParkHoldsWithoutProbing: a destination parked by hand holds its leads,
// is never probed, and resumes them only when unparked by hand.
func TestManualParkHoldsWithoutProbing(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		p := newSwitchable(nil)
		w := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p.Provider), PollInterval: time.Hour,
			Now: clock.Now, After: clock.After, ProcessClock: true})
		dest := outbox.DestinationOf(outbox.Delivery{Channel: outbox.ChannelWebhook, Recipient: parkHookURL}, "")
		if fresh, err := w.ParkDestination(ctxFor(t), dest, "ops"); err != nil || !fresh {
			t.Fatalf("park: %v, %v", fresh, err)
		}
		d := acceptHook(t, s)
		w.Wake()
		waitFor(t, 10*time.Second, "the lead held", statusIs(t, s, d.ID, outbox.DeliveryParked, 0))
		clock.Advance(24 * time.Hour)
		w.Wake()
		awaitIdle(t, s, []outbox.Delivery{d})
		if n := p.TotalCalls(); n != 0 {
			t.Fatalf("a manual park was probed (%d calls)", n)
		}
		if n, err := w.UnparkDestination(ctxFor(t), dest.Key, "ops"); err != nil || n != 1 {
			t.Fatalf("unpark: %d, %v", n, err)
		}
		waitFor(t, 10*time.Second, "the lead sent", statusIs(t, s, d.ID, outbox.DeliverySent, 1))
		if _, err := w.UnparkDestination(ctxFor(t), dest.Key, "ops"); !errors.Is(err, outbox.ErrNotParked) {
			t.Errorf("second unpark: %v, want ErrNotParked", err)
		}
	})
}

// awaitIdle waits until none of ds is due or leased: the worker has done what it would.
func awaitIdle(t testing.TB, s outbox.Store, ds []outbox.Delivery) {
	t.Helper()
	waitFor(t, 10*time.Second, "the worker to settle", func() bool {
		for _, d := range ds {
			switch getDelivery(t, s, d.ID).Status {
			case outbox.DeliveryPending, outbox.DeliverySending:
				return false
			}
		}
		return true
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestThrottlingNeverParks: a destination that answers 429 works and asks to slow down;
// however often it does, backoff serves it and it is never parked.
func TestThrottlingNeverParks(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		p := newSwitchable(&providers.Error{Class: providers.Temporary, HTTPStatus: 429, RetryAfter: time.Second,
			Err: errors.New("slow down")})
		w := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p.Provider), PollInterval: time.Hour,
			Now: clock.Now, After: clock.After, ProcessClock: true,
			Retry:   outbox.RetryPolicy{Base: time.Second, MaxDelay: time.Second, Jitter: -1},
			Parking: outbox.ParkPolicy{After: 2}})
		d := acceptHook(t, s)
		w.Wake()
		for attempt := 1; attempt <= 4; attempt++ {
			waitFor(t, 10*time.Second, "a throttled attempt", statusIs(t, s, d.ID, outbox.DeliveryFailed, attempt))
			clock.Set(getDelivery(t, s, d.ID).NextAttemptAt)
			w.Wake()
		}
		if list := parkedList(t, s); len(list) != 0 {
			t.Errorf("a throttling destination was parked: %+v", list)
		}
	})
}

// TestParkHoldsAcrossWorkersAndRestarts: a park made by one worker holds for another on
// the same store (its copy refreshed when it claims), and a worker started later (a
// restart) finds the park and probes it on schedule.
func TestParkHoldsAcrossWorkersAndRestarts(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		cfg := func(p *switchable) outbox.WorkerConfig {
			return outbox.WorkerConfig{Store: s, Sender: router(p.Provider), PollInterval: time.Hour,
				Now: clock.Now, After: clock.After, ProcessClock: true,
				Parking: outbox.ParkPolicy{Refresh: time.Second}}
		}
		pa, pb := newSwitchable(errGone), newSwitchable(nil)
		// b starts first and reads the (empty) parked set at its first pass; it is woken
		// only by this test, so a alone sends the first lead.
		onPass, passes := passSignal()
		cb := cfg(pb)
		cb.OnPass = onPass
		b := startWorker(t, cb)
		awaitPass(t, passes)
		a := outbox.NewWorker(cfg(pa))
		if err := a.Start(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		first := acceptHook(t, s)
		a.Wake()
		waitFor(t, 10*time.Second, "the first lead held", statusIs(t, s, first.ID, outbox.DeliveryParked, 0))
		if err := a.Stop(ctxFor(t)); err != nil {
			t.Fatal(err)
		}

		// b read the parked set before the park; its copy is refreshed when it claims.
		clock.Advance(2 * time.Second)
		second := acceptHook(t, s)
		b.Wake()
		waitFor(t, 10*time.Second, "the second lead held by the other worker", statusIs(t, s, second.ID, outbox.DeliveryParked, 0))
		if n := pb.TotalCalls(); n != 0 {
			t.Fatalf("the other worker sent to the parked destination %d times", n)
		}
		if err := b.Stop(ctxFor(t)); err != nil {
			t.Fatal(err)
		}

		// A restart: a new worker finds the park and probes it when it is due.
		pc := newSwitchable(nil)
		startWorker(t, cfg(pc))
		list := parkedList(t, s)
		if len(list) != 1 {
			t.Fatalf("parked after the restart: %+v", list)
		}
		clock.Set(list[0].ProbeAt)
		for _, d := range []outbox.Delivery{first, second} {
			waitFor(t, 10*time.Second, "the lead sent after the probe", statusIs(t, s, d.ID, outbox.DeliverySent, 1))
		}
		if got := pc.order(); strings.Join(got, ",") != first.ID.String()+","+second.ID.String() {
			t.Errorf("sent %v, want the first lead (the probe), then the second", got)
		}
	})
}
