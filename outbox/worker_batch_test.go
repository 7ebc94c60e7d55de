package outbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

// countingStore records the worker's claims and batched completions on their way to the
// real store.
type countingStore struct {
	outbox.Store
	mu          sync.Mutex
	claimLimits []int
	batchSizes  []int
}

func (c *countingStore) Claim(ctx context.Context, p outbox.ClaimParams) ([]outbox.Delivery, error) {
	c.mu.Lock()
	c.claimLimits = append(c.claimLimits, p.Limit)
	c.mu.Unlock()
	return c.Store.Claim(ctx, p)
}

func (c *countingStore) CompleteBatch(ctx context.Context, cs []outbox.Completion) []error {
	c.mu.Lock()
	c.batchSizes = append(c.batchSizes, len(cs))
	c.mu.Unlock()
	return c.Store.CompleteBatch(ctx, cs)
}

// TestWorkerClaimsInBatches: with sends finishing one by one, the worker must not claim
// again for every slot that frees (one transaction and commit per row), but wait for three
// quarters of a batch of free slots; and completions that finish together share
// CompleteBatch calls.
func TestWorkerClaimsInBatches(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		const n, concurrency, batch = 100, 25, 25
		ds := acceptMany(t, s, n, 1)
		cs := &countingStore{Store: s}
		p := fake.New("fake")
		startWorker(t, outbox.WorkerConfig{Store: cs, Sender: router(p), Concurrency: concurrency, Batch: batch,
			PollInterval: time.Hour})
		waitFor(t, time.Minute, "every delivery to be sent", func() bool {
			for _, d := range ds {
				if getDelivery(t, s, d.ID).Status != outbox.DeliverySent {
					return false
				}
			}
			return true
		})

		cs.mu.Lock()
		defer cs.mu.Unlock()
		// Every claim asks for at least three quarters of a batch; all but the last of the
		// pass come back full, so n rows take at most n/need full claims and one short one.
		need := batch * 3 / 4
		for i, l := range cs.claimLimits {
			if l < need {
				t.Errorf("claim %d asked for %d rows, want at least %d (three quarters of a batch)", i, l, need)
			}
		}
		if most := n/need + 1; len(cs.claimLimits) > most {
			t.Errorf("%d claims for %d deliveries, want at most %d: %v", len(cs.claimLimits), n, most, cs.claimLimits)
		}
		total, biggest := 0, 0
		for _, b := range cs.batchSizes {
			total += b
			biggest = max(biggest, b)
		}
		if total != n || biggest < 2 {
			t.Errorf("completion batches %v: want %d completions in total, some of them sharing a batch", cs.batchSizes, n)
		}
	})
}
