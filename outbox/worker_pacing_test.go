package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

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
// do), which never has to wait.
func TestPacedEmailLeavesSlotsToOtherChannels(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		const emails, webhooks, rate = 200, 20, 2.0
		interval := time.Duration(float64(time.Second) / rate)
		var emailIDs []outbox.Delivery
		for i := range emails {
			sub := storetest.NewSubmission("contact")
			d := storetest.NewDelivery(sub, "email", fmt.Sprintf("r%d@example.com", i))
			storetest.MustAccept(t, s, sub, d)
			emailIDs = append(emailIDs, d)
		}
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
			Now: clock.Now, After: clock.After, ProcessClock: true, Lease: lease, PollInterval: time.Hour, OnPass: onPass})

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
		for _, d := range emailIDs {
			got := getDelivery(t, s, d.ID)
			if as := listAttempts(t, s, d.ID); got.Status != outbox.DeliverySent || got.Attempts != 1 || len(as) != 1 || log.calls[d.ID.String()] != 1 {
				t.Fatalf("e-mail %s: %s with %d attempts, %d attempt rows, %d sends; want sent once with one attempt",
					d.ID, got.Status, got.Attempts, len(as), log.calls[d.ID.String()])
			}
		}
	})
}
