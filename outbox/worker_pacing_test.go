package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/ratelimit"
)

// channelPacer paces one channel to one rate, as the App's pacer paces e-mail to its
// first provider's.
type channelPacer struct {
	ch   outbox.Channel
	rate float64
	p    ratelimit.Pacer
}

func (c *channelPacer) Reserve(d outbox.Delivery, now time.Time) (bool, time.Time) {
	if d.Channel != c.ch {
		return true, now
	}
	return c.p.Reserve(d.ID.String(), []ratelimit.Limit{{Key: string(c.ch), PerSecond: c.rate}}, now)
}

// sendLog records, by the manual clock, when each send reached the provider and how
// long its lease had been held by then.
type sendLog struct {
	clock *outbox.ManualClock
	lease time.Duration
	next  outbox.Sender

	mu    sync.Mutex
	sent  map[outbox.Channel][]time.Time
	idle  time.Duration // the longest a lease was held before its send began
	calls map[string]int
}

func (l *sendLog) Send(ctx context.Context, d outbox.Delivery) (providers.Result, error) {
	now := l.clock.Now()
	l.mu.Lock()
	if held := now.Sub(d.LockedUntil.Add(-l.lease)); held > l.idle {
		l.idle = held
	}
	l.calls[d.ID.String()]++
	l.mu.Unlock()
	res, err := l.next.Send(ctx, d)
	l.mu.Lock()
	l.sent[d.Channel] = append(l.sent[d.Channel], l.clock.Now())
	l.mu.Unlock()
	return res, err
}

func (l *sendLog) count(ch outbox.Channel) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sent[ch])
}

// acceptEmails stores n submissions of one e-mail delivery each.
func acceptEmails(t *testing.T, s outbox.Store, n int) []outbox.Delivery {
	var ds []outbox.Delivery
	for i := range n {
		sub := storetest.NewSubmission("contact")
		d := storetest.NewDelivery(sub, "email", fmt.Sprintf("r%d@example.com", i))
		storetest.MustAccept(t, s, sub, d)
		ds = append(ds, d)
	}
	return ds
}

// okProvider accepts every message.
type okProvider struct{}

func (okProvider) Name() string { return "ok" }
func (okProvider) Send(context.Context, providers.Message) (providers.Result, error) {
	return providers.Result{Provider: "ok"}, nil
}

// TestPacedEmailLeavesSlotsToOtherChannels: a backlog of 200 e-mails paced at 2/s ahead
// of 20 webhooks in the queue. Paced at claim time, the e-mails over the rate go back to
// the database, pending and unleased, due at their slots, so the webhooks are all sent
// at once instead of after the e-mails drain; each e-mail is sent on its slot with one
// attempt and a lease held only from its send's start; the drain takes the 99.5 s the
// rate implies. The e-mail provider keeps its own bucket behind the pacer (as the App's
// do), which never has to wait. Holding near slots in the worker is off here (PacedHold
// -1), so every refused e-mail takes the release path; TestPacedHold covers the hold.
func TestPacedEmailLeavesSlotsToOtherChannels(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		const emails, webhooks, rate = 200, 20, 2.0
		interval := ratelimit.Interval(rate)
		emailIDs := acceptEmails(t, s, emails)
		for i := range webhooks {
			sub := storetest.NewSubmission("contact")
			storetest.MustAccept(t, s, sub, storetest.NewDelivery(sub, "hook", fmt.Sprintf("https://hooks.example.com/%d", i)))
		}

		clock := newClock()
		start := clock.Now()
		const lease = time.Minute
		email := ratelimit.Provider{Next: okProvider{}, Bucket: ratelimit.NewBucket(rate, clock.Now, clock.After)}
		log := &sendLog{clock: clock, lease: lease, next: outbox.Router{Email: &email, Webhook: okProvider{}},
			sent: map[outbox.Channel][]time.Time{}, calls: map[string]int{}}
		onPass, passes := passSignal()
		startWorker(t, outbox.WorkerConfig{Store: s, Sender: log, Pacer: &channelPacer{ch: outbox.ChannelEmail, rate: rate},
			Now: clock.Now, After: clock.After, ProcessClock: true, Lease: lease, PollInterval: time.Hour, OnPass: onPass,
			PacedHold: -1})

		waitFor(t, 30*time.Second, "every webhook and the first e-mail sent at once", func() bool {
			return log.count(outbox.ChannelWebhook) == webhooks && log.count(outbox.ChannelEmail) == 1
		})
		awaitPass(t, passes)
		// A claim's refused e-mails are released beside the next claims: once every one
		// is back (none left sending, so none holds a lease while it waits), ...
		waitFor(t, 30*time.Second, "every refused e-mail released", func() bool {
			for _, d := range emailIDs {
				if got := getDelivery(t, s, d.ID); got.Status == outbox.DeliverySending {
					return false
				}
			}
			return true
		})
		// ... the e-mails waiting for their slots are in the database, not in the worker:
		// pending (never leased), no attempt charged, each due on a slot of its own.
		due := map[time.Time]bool{}
		for _, d := range emailIDs {
			got := getDelivery(t, s, d.ID)
			if got.Status == outbox.DeliverySent {
				continue
			}
			if got.Status != outbox.DeliveryPending || got.Attempts != 0 || got.LeaseToken != "" ||
				!got.NextAttemptAt.After(start) || due[got.NextAttemptAt] {
				t.Fatalf("waiting e-mail = %s, %d attempts, lease %q, due %v; want pending, 0, no lease, due on its own slot after %v",
					got.Status, got.Attempts, got.LeaseToken, got.NextAttemptAt, start)
			}
			due[got.NextAttemptAt] = true
		}
		if len(due) != emails-1 {
			t.Fatalf("%d e-mails waiting, want %d", len(due), emails-1)
		}

		for k := 2; k <= emails; k++ {
			clock.Advance(interval)
			waitFor(t, 30*time.Second, fmt.Sprintf("e-mail %d sent", k), func() bool { return log.count(outbox.ChannelEmail) >= k })
			awaitPass(t, passes)
		}
		log.mu.Lock()
		sent, idle := log.sent[outbox.ChannelEmail], log.idle
		log.mu.Unlock()
		if len(sent) != emails {
			t.Fatalf("%d e-mails sent, want %d", len(sent), emails)
		}
		for i := 1; i < len(sent); i++ {
			if gap := sent[i].Sub(sent[i-1]); gap < interval {
				t.Fatalf("e-mails %d and %d sent %v apart, under the rate's %v", i-1, i, gap, interval)
			}
		}
		if drain, want := sent[len(sent)-1].Sub(start), time.Duration(emails-1)*interval; drain != want {
			t.Errorf("the e-mails drained in %v, want the %v the rate implies", drain, want)
		}
		if idle != 0 {
			t.Errorf("a lease was held %v before its send began, want 0", idle)
		}
		waitFor(t, 30*time.Second, "every e-mail's outcome recorded", func() bool {
			for _, d := range emailIDs {
				if getDelivery(t, s, d.ID).Status != outbox.DeliverySent {
					return false
				}
			}
			return true
		})
		for _, d := range emailIDs {
			got := getDelivery(t, s, d.ID)
			if as := listAttempts(t, s, d.ID); got.Status != outbox.DeliverySent || got.Attempts != 1 || len(as) != 1 || log.calls[d.ID.String()] != 1 {
				t.Fatalf("e-mail %s: %s with %d attempts, %d attempt rows, %d sends; want sent once with one attempt",
					d.ID, got.Status, got.Attempts, len(as), log.calls[d.ID.String()])
			}
		}
	})
}

// releaseCounter counts the store's Release and Claim calls: each release of a paced
// delivery is a write, and each claim a transaction.
type releaseCounter struct {
	outbox.Store
	mu       sync.Mutex
	releases int
	claims   int
}

func (r *releaseCounter) Release(ctx context.Context, id uuid.UUID, token string, now time.Time) error {
	err := r.Store.Release(ctx, id, token, now)
	r.mu.Lock()
	r.releases++
	r.mu.Unlock()
	return err
}

func (r *releaseCounter) Claim(ctx context.Context, p outbox.ClaimParams) ([]outbox.Delivery, error) {
	ds, err := r.Store.Claim(ctx, p)
	if len(ds) > 0 {
		r.mu.Lock()
		r.claims++
		r.mu.Unlock()
	}
	return ds, err
}

func (r *releaseCounter) counts() (releases, claims int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.releases, r.claims
}

// TestPacedHold: refused e-mails whose slot is within PacedHold (1 s by default; here
// the two intervals of 2/s with their headroom, 1.02 s) wait for it in the worker,
// leased, and are sent on it without going back to the store;
// later ones are released as before. Then the worker falls behind (the clock jumps 3 s
// past the next slots before the loop claims them, as on a loaded machine): the claim
// that finds three slots come at once sends them an interval apart, held, rather than
// sending one and releasing the others for a claim each (one send per claim was the
// drain's pace under load before the hold).
func TestPacedHold(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		const emails, rate = 6, 2.0
		interval := ratelimit.Interval(rate)
		var ids []uuid.UUID
		for _, d := range acceptEmails(t, s, emails) {
			ids = append(ids, d.ID)
		}
		clock := newClock()
		start := clock.Now()
		counted := &releaseCounter{Store: s}
		log := &sendLog{clock: clock, lease: time.Minute, next: outbox.Router{Email: okProvider{}},
			sent: map[outbox.Channel][]time.Time{}, calls: map[string]int{}}
		startWorker(t, outbox.WorkerConfig{Store: counted, Sender: log, Pacer: &channelPacer{ch: outbox.ChannelEmail, rate: rate},
			Now: clock.Now, After: clock.After, ProcessClock: true, Lease: time.Minute, PollInterval: time.Hour,
			PacedHold: 2 * interval})

		// e-mail 0 is sent at once; 1 and 2 (slots one and two intervals on) are held; 3, 4
		// and 5 go back to the store.
		waitFor(t, 30*time.Second, "the first e-mail sent and three released", func() bool {
			r, _ := counted.counts()
			return log.count(outbox.ChannelEmail) == 1 && r == 3
		})
		// Leased but not sent (the sent one may still be recording its outcome).
		held := 0
		for _, id := range ids {
			log.mu.Lock()
			sent := log.calls[id.String()] > 0
			log.mu.Unlock()
			if d := getDelivery(t, s, id); d.Status == outbox.DeliverySending && !sent {
				held++
			}
		}
		if held != 2 {
			t.Fatalf("%d e-mails held leased in the worker, want 2 (the slots within 1 s)", held)
		}
		for k := 2; k <= 3; k++ {
			clock.Advance(interval)
			waitFor(t, 30*time.Second, fmt.Sprintf("held e-mail %d sent", k), func() bool { return log.count(outbox.ChannelEmail) >= k })
		}
		// Late: the loop's wake for e-mail 3's slot fires only 3 s on, when 3, 4 and 5 are all due.
		clock.Advance(3 * time.Second)
		waitFor(t, 30*time.Second, "the late claim's first e-mail sent", func() bool { return log.count(outbox.ChannelEmail) >= 4 })
		for k := 5; k <= emails; k++ {
			clock.Advance(interval)
			waitFor(t, 30*time.Second, fmt.Sprintf("e-mail %d sent", k), func() bool { return log.count(outbox.ChannelEmail) >= k })
		}
		releases, claims := counted.counts()
		if releases != 3 || claims != 2 {
			t.Errorf("%d releases and %d claims, want 3 and 2: a claim whose slots came at once released some again", releases, claims)
		}
		log.mu.Lock()
		sent := append([]time.Time(nil), log.sent[outbox.ChannelEmail]...)
		log.mu.Unlock()
		late := 2*interval + 3*time.Second
		want := []time.Duration{0, interval, 2 * interval, late, late + interval, late + 2*interval}
		for i, at := range sent {
			if got := at.Sub(start); got != want[i] {
				t.Errorf("e-mail %d sent at +%v, want +%v", i, got, want[i])
			}
		}
		waitFor(t, 30*time.Second, "every e-mail's outcome recorded", func() bool {
			for _, id := range ids {
				if getDelivery(t, s, id).Status != outbox.DeliverySent {
					return false
				}
			}
			return true
		})
		for _, id := range ids {
			if d, as := getDelivery(t, s, id), listAttempts(t, s, id); d.Status != outbox.DeliverySent || d.Attempts != 1 || len(as) != 1 {
				t.Errorf("e-mail %s: %s, %d attempts, %d attempt rows; want sent with one", id, d.Status, d.Attempts, len(as))
			}
		}
	})
}
