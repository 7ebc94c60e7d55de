package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

// TestBackoffDeadLetterAndManualRetry walks one delivery through its whole failure life:
// an ambiguous try and temporary tries spaced by jittered exponential backoff, dead when
// the budget is spent (with its event, callback and log line), then a manual retry that
// the worker sends. The attempts table shows every try.
func TestBackoffDeadLetterAndManualRetry(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		d := acceptOne(t, s, func(d *outbox.Delivery) { d.MaxAttempts = 3 })
		p := fake.New("fake")
		var mu sync.Mutex
		tries := 0
		p.Fail(func(m providers.Message) error {
			mu.Lock()
			defer mu.Unlock()
			tries++
			if tries == 1 {
				return &providers.Error{Class: providers.Ambiguous, Code: "timeout", Err: errors.New("no answer from sales@example.com's server")}
			}
			return &providers.Error{Class: providers.Temporary, HTTPStatus: 503, Err: errors.New("unavailable")}
		})
		dead := make(chan outbox.Delivery, 10)
		logger, logs := observedLogger()
		w := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p), PollInterval: time.Hour,
			Retry: outbox.RetryPolicy{Base: 30 * time.Second, MaxDelay: time.Hour},
			Now:   clock.Now, After: clock.After, ProcessClock: true, Logger: logger,
			OnDead: func(d outbox.Delivery) { dead <- d }})

		// Attempt n fails at clock.Now() and is scheduled base*2^(n-1) later, +-20%.
		for n, base := range []time.Duration{30 * time.Second, 60 * time.Second} {
			attempt := n + 1
			waitFor(t, 10*time.Second, "a failed attempt", statusIs(t, s, d.ID, outbox.DeliveryFailed, attempt))
			got := getDelivery(t, s, d.ID)
			delay := got.NextAttemptAt.Sub(clock.Now())
			lo, hi := time.Duration(float64(base)*0.8), time.Duration(float64(base)*1.2)
			if delay < lo || delay > hi {
				t.Fatalf("attempt %d: next attempt in %v, want within [%v, %v]", attempt, delay, lo, hi)
			}
			// Not due a moment before its time.
			early, err := s.Claim(ctxFor(t), outbox.ClaimParams{Owner: "probe", Limit: 1, Lease: time.Minute, Now: got.NextAttemptAt.Add(-time.Millisecond)})
			if err != nil || len(early) != 0 {
				t.Fatalf("attempt %d: claimable before next_attempt_at (%d rows, %v)", attempt, len(early), err)
			}
			clock.Set(got.NextAttemptAt)
			w.Wake()
		}
		waitFor(t, 10*time.Second, "the delivery to be dead", statusIs(t, s, d.ID, outbox.DeliveryDead, 3))
		select {
		case got := <-dead:
			if got.ID != d.ID || got.Status != outbox.DeliveryDead {
				t.Fatalf("OnDead got %s %s", got.ID, got.Status)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("OnDead was not called")
		}
		assertDeadEvent(t, s, d, 3)

		var deadLines int
		for _, e := range logs.FilterMessage("delivery dead").All() {
			f := e.ContextMap()
			if f["delivery_id"] == d.ID.String() && f["submission_id"] == d.SubmissionID.String() && f["route"] == "email" {
				deadLines++
			}
		}
		if deadLines != 1 {
			t.Errorf("%d 'delivery dead' log lines with the delivery's ids, want 1", deadLines)
		}
		assertNoAddressesLogged(t, logs)

		// By hand: pending again with a fresh budget; the worker sends it.
		p.SetScript(nil)
		if err := s.Retry(ctxFor(t), d.ID, clock.Now()); err != nil {
			t.Fatalf("retry: %v", err)
		}
		w.Wake()
		waitFor(t, 10*time.Second, "the retried delivery to be sent", statusIs(t, s, d.ID, outbox.DeliverySent, 1))
		// The sent line is at Debug, written after the store write.
		waitFor(t, 10*time.Second, "a 'delivery sent' log line with the delivery's ids", func() bool {
			for _, e := range logs.FilterMessage("delivery sent").All() {
				f := e.ContextMap()
				if e.Level == zapcore.DebugLevel && f["delivery_id"] == d.ID.String() && f["provider"] == "fake" && f["outcome"] == string(outbox.OutcomeSent) {
					return true
				}
			}
			return false
		})
		assertNoAddressesLogged(t, logs)

		as := listAttempts(t, s, d.ID)
		want := []outbox.Outcome{outbox.OutcomeAmbiguous, outbox.OutcomeTemporary, outbox.OutcomeTemporary, outbox.OutcomeSent}
		if len(as) != len(want) {
			t.Fatalf("attempts = %+v, want %d", as, len(want))
		}
		for i, a := range as {
			if a.Outcome != want[i] || a.Attempt != i+1 {
				t.Errorf("attempt row %d = #%d %s, want #%d %s", i, a.Attempt, a.Outcome, i+1, want[i])
			}
		}
		if as[1].HTTPStatus != 503 || as[0].ErrorCode != "timeout" || !strings.Contains(as[2].Error, "unavailable") {
			t.Errorf("attempt details lost: %+v", as)
		}
		if n := p.TotalCalls(); n != 4 {
			t.Errorf("provider called %d times, want 4", n)
		}
	})
}

func assertDeadEvent(t *testing.T, s outbox.Store, d outbox.Delivery, attempts int) {
	t.Helper()
	evs, err := s.ListEvents(ctxFor(t), outbox.EventDeliveryDead, 100)
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for _, e := range evs {
		if e.DeliveryID != d.ID {
			continue
		}
		found++
		if e.SubmissionID != d.SubmissionID {
			t.Errorf("dead event submission %s, want %s", e.SubmissionID, d.SubmissionID)
		}
		var data map[string]any
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatalf("dead event data %s: %v", e.Data, err)
		}
		if data["route"] != d.Route || data["channel"] != string(d.Channel) || data["attempts"] != float64(attempts) {
			t.Errorf("dead event data = %s", e.Data)
		}
		if strings.Contains(string(e.Data), "@") {
			t.Errorf("dead event data carries an address: %s", e.Data)
		}
	}
	if found != 1 {
		t.Fatalf("%d delivery.dead events for the delivery, want 1", found)
	}
}

// TestPermanentErrorIsDeadAtOnce: no retry can fix a permanent error, so the first one
// ends the delivery.
func TestPermanentErrorIsDeadAtOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		d := acceptOne(t, s)
		p := fake.New("fake")
		p.Fail(func(providers.Message) error {
			return &providers.Error{Class: providers.Permanent, HTTPStatus: 422, Code: "validation_error", Err: errors.New("invalid recipient")}
		})
		startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p), PollInterval: time.Hour})
		waitFor(t, 10*time.Second, "the delivery to be dead", statusIs(t, s, d.ID, outbox.DeliveryDead, 1))
		assertDeadEvent(t, s, d, 1)
		as := listAttempts(t, s, d.ID)
		if len(as) != 1 || as[0].Outcome != outbox.OutcomePermanent || as[0].HTTPStatus != 422 || as[0].ErrorCode != "validation_error" {
			t.Fatalf("attempts = %+v, want one permanent attempt with its status and code", as)
		}
		if got := getDelivery(t, s, d.ID); !strings.Contains(got.LastError, "invalid recipient") {
			t.Fatalf("last_error = %q", got.LastError)
		}
		if n := p.TotalCalls(); n != 1 {
			t.Fatalf("provider called %d times, want 1", n)
		}
	})
}

// TestRetryAfterIsHonoured: a provider asking for two hours gets two hours, not the 30s
// backoff.
func TestRetryAfterIsHonoured(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		d := acceptOne(t, s)
		p := fake.New("fake")
		p.Fail(func(providers.Message) error {
			return &providers.Error{Class: providers.Temporary, HTTPStatus: 429, RetryAfter: 2 * time.Hour, Err: errors.New("slow down")}
		})
		startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p), PollInterval: time.Hour, Now: clock.Now, After: clock.After, ProcessClock: true})
		waitFor(t, 10*time.Second, "a failed attempt", statusIs(t, s, d.ID, outbox.DeliveryFailed, 1))
		if got := getDelivery(t, s, d.ID).NextAttemptAt; !got.Equal(clock.Now().Add(2 * time.Hour)) {
			t.Fatalf("next attempt at %v, want %v (Retry-After)", got, clock.Now().Add(2*time.Hour))
		}
	})
}

// TestMaxAttemptsDefaultsByChannel: a delivery stored without a budget gets 8 tries as an
// email and 10 as a webhook.
func TestMaxAttemptsDefaultsByChannel(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		for _, tc := range []struct {
			route, recipient string
			budget           int
		}{
			{"email", "sales@example.com", 8},
			{"webhook", "https://crm.example.com/hook", 10},
		} {
			clock := newClock()
			sub := storetest.NewSubmission("contact")
			d := storetest.NewDelivery(sub, tc.route, tc.recipient)
			d.MaxAttempts = 0
			storetest.MustAccept(t, s, sub, d)
			p := fake.New("fake")
			p.Fail(func(providers.Message) error { return errors.New("down") })
			w := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p), PollInterval: time.Hour,
				Now: clock.Now, After: clock.After, ProcessClock: true, Retry: outbox.RetryPolicy{Base: time.Second, MaxDelay: time.Second, Jitter: -1},
				// The budget is what is under test: with parking on, the destination
				// would park after five failures in a row and hold the delivery.
				Parking: outbox.ParkPolicy{Off: true}})
			for n := 1; n < tc.budget; n++ {
				waitFor(t, 10*time.Second, tc.route+" failed attempt", statusIs(t, s, d.ID, outbox.DeliveryFailed, n))
				clock.Advance(time.Second)
				w.Wake()
			}
			waitFor(t, 10*time.Second, tc.route+" dead", statusIs(t, s, d.ID, outbox.DeliveryDead, tc.budget))
			if err := w.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}
