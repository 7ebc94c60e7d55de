package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

// TestExactlyOnceWithoutFaults: several workers racing over one store must hand every
// delivery to the provider exactly once, and leave every row sent with one attempt.
func TestExactlyOnceWithoutFaults(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		ds := acceptMany(t, s, 200, 10)
		p := fake.New("fake")
		var workers []*outbox.Worker
		for range 4 {
			workers = append(workers, startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p), Batch: 10}))
		}
		assertExactlyOnce(t, p, workers, []outbox.Store{s}, ds)
	})

	t.Run("postgres/two_pools", func(t *testing.T) {
		t.Parallel()
		cfg := storetest.NewPostgresSchema(t)
		s1 := storetest.OpenPostgresAt(t, cfg)
		s2 := storetest.OpenPostgresAt(t, cfg)
		ds := acceptMany(t, s1, 200, 10)
		p := fake.New("fake")
		workers := []*outbox.Worker{
			startWorker(t, outbox.WorkerConfig{Store: s1, Sender: router(p), Notifications: true}),
			startWorker(t, outbox.WorkerConfig{Store: s2, Sender: router(p), Notifications: true}),
		}
		assertExactlyOnce(t, p, workers, []outbox.Store{s1, s2}, ds)
	})
}

func assertExactlyOnce(t *testing.T, p *fake.Provider, workers []*outbox.Worker, stores []outbox.Store, ds []outbox.Delivery) {
	t.Helper()
	waitFor(t, 2*time.Minute, "every delivery to reach the provider", func() bool {
		return p.TotalDelivered() >= len(ds)
	})
	for _, w := range workers {
		if err := w.Stop(context.Background()); err != nil {
			t.Fatalf("stop: %v", err)
		}
	}
	if got := p.TotalCalls(); got != len(ds) {
		t.Errorf("provider was called %d times for %d deliveries", got, len(ds))
	}
	for _, d := range ds {
		if n := p.Delivered(d.ID.String()); n != 1 {
			t.Fatalf("delivery %s reached the provider %d times, want exactly 1", d.ID, n)
		}
	}
	// Alternate stores so that both pools' views are read.
	for i, d := range ds {
		s := stores[i%len(stores)]
		got := getDelivery(t, s, d.ID)
		if got.Status != outbox.DeliverySent || got.Attempts != 1 || got.ProviderMessageID != "fake-"+d.ID.String() {
			t.Fatalf("delivery %s: status %s attempts %d message id %q, want sent, 1, fake-<id>",
				d.ID, got.Status, got.Attempts, got.ProviderMessageID)
		}
		as := listAttempts(t, s, d.ID)
		if len(as) != 1 || as[0].Outcome != outbox.OutcomeSent || as[0].Provider != "fake" {
			t.Fatalf("delivery %s: attempts %+v, want one sent attempt", d.ID, as)
		}
	}
}
