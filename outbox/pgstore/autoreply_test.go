package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// Two instances (two stores, two pools) on one schema, posting from one address at the
// same moment: the autoreplies row decides, so one reply is stored per round.
func TestAutoreplyTwoInstancesRacingMakeOneReply(t *testing.T) {
	cfg := storetest.NewPostgresSchema(t)
	a, b := storetest.OpenPostgresAt(t, cfg), storetest.OpenPostgresAt(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const rounds, perStore = 20, 4
	for round := range rounds {
		address := fmt.Sprintf("visitor%d@example.com", round)
		start := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var subs []*outbox.Submission
		errs := make(chan error, 2*perStore)
		for i := range 2 * perStore {
			s := outbox.Store(a)
			if i%2 == 1 {
				s = b
			}
			sub := storetest.NewSubmission("contact", storetest.WithCreatedAt(t0.Add(time.Duration(i)*time.Millisecond)))
			mu.Lock()
			subs = append(subs, sub)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := outbox.AcceptOne(ctx, s, sub, []outbox.Delivery{storetest.NewAutoreply(sub, address, time.Hour)})
				errs <- err
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: accept: %v", round, err)
			}
		}
		replies := 0
		for _, sub := range subs {
			ds, err := a.ListDeliveries(ctx, sub.ID)
			if err != nil {
				t.Fatal(err)
			}
			replies += len(ds)
		}
		if replies != 1 {
			t.Fatalf("round %d: %d autoreplies stored for %d racing posts from one address, want 1", round, replies, len(subs))
		}
	}
}
