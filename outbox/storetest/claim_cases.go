package storetest

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var _ = register("ClaimTakesDueRowsOldestFirstUpToLimit", func(t *testing.T, s outbox.Store) {
	// Stored out of due order; the claim must order by next_attempt_at.
	d3 := acceptDue(t, s, t0.Add(minutes(3)))
	d1 := acceptDue(t, s, t0.Add(minutes(1)))
	last := t0.Add(minutes(5) + 30*time.Second) // before the first leases expire
	d10 := acceptDue(t, s, last)
	d2 := acceptDue(t, s, t0.Add(minutes(2)))

	now := t0.Add(minutes(5))
	if got := claim(t, s, t0, 10); len(got) != 0 {
		t.Fatalf("claimed %d deliveries before any was due", len(got))
	}
	got := claim(t, s, now, 2)
	if !reflect.DeepEqual(ids(got), []uuid.UUID{d1.ID, d2.ID}) {
		t.Fatalf("first claim got %v, want the two oldest due %v", ids(got), []uuid.UUID{d1.ID, d2.ID})
	}
	tokens := map[string]bool{}
	for _, d := range got {
		if d.Status != outbox.DeliverySending || d.Attempts != 1 || d.LeaseOwner != "worker-a" ||
			d.LeaseToken == "" || !d.LockedUntil.Equal(now.Add(testLease)) {
			t.Errorf("claimed delivery = status %s attempts %d owner %q token %q locked until %v; want sending, 1, worker-a, a token, %v",
				d.Status, d.Attempts, d.LeaseOwner, d.LeaseToken, d.LockedUntil, now.Add(testLease))
		}
		tokens[d.LeaseToken] = true
		// What Claim returned is what the row now holds.
		if stored := getDelivery(t, s, d.ID); !reflect.DeepEqual(stored, d) {
			t.Errorf("stored row differs from the claimed value:\n got %+v\nwant %+v", stored, d)
		}
	}
	if len(tokens) != 2 {
		t.Errorf("two claimed rows share a lease token")
	}
	if got := claim(t, s, now, 10); !reflect.DeepEqual(ids(got), []uuid.UUID{d3.ID}) {
		t.Fatalf("second claim got %v, want only %v (the others are leased or not due)", ids(got), d3.ID)
	}
	if got := claim(t, s, now, 10); len(got) != 0 {
		t.Fatalf("third claim got %v, want nothing", ids(got))
	}
	// Due exactly at Now counts as due.
	if got := claim(t, s, last, 10); !reflect.DeepEqual(ids(got), []uuid.UUID{d10.ID}) {
		t.Fatalf("claim at the due instant got %v, want %v", ids(got), d10.ID)
	}
})

var _ = register("ClaimReclaimsExpiredLeases", func(t *testing.T, s outbox.Store) {
	acceptDue(t, s, t0)
	first := claimAs(t, s, "worker-a", t0, 1)
	if len(first) != 1 {
		t.Fatalf("claimed %d, want 1", len(first))
	}
	if got := claimAs(t, s, "worker-b", t0.Add(testLease/2), 1); len(got) != 0 {
		t.Fatalf("reclaimed a live lease")
	}
	if got := claimAs(t, s, "worker-b", t0.Add(testLease), 1); len(got) != 0 {
		t.Fatalf("reclaimed a lease at its last instant (locked_until < now is required)")
	}
	now := t0.Add(testLease + time.Microsecond)
	second := claimAs(t, s, "worker-b", now, 1)
	if len(second) != 1 || second[0].ID != first[0].ID {
		t.Fatalf("expired lease not reclaimed: got %v", ids(second))
	}
	d := second[0]
	if d.Attempts != 2 || d.LeaseOwner != "worker-b" || d.LeaseToken == first[0].LeaseToken || !d.LockedUntil.Equal(now.Add(testLease)) {
		t.Errorf("reclaimed delivery: attempts %d owner %q token changed %v locked until %v; want 2, worker-b, true, %v",
			d.Attempts, d.LeaseOwner, d.LeaseToken != first[0].LeaseToken, d.LockedUntil, now.Add(testLease))
	}
})

var _ = register("ConcurrentClaimersNeverShareARow", func(t *testing.T, s outbox.Store) {
	const n, workers = 120, 8
	for i := range n {
		acceptDue(t, s, t0.Add(time.Duration(i)*time.Millisecond))
	}
	now := t0.Add(time.Hour)
	var (
		mu    sync.Mutex
		seen  = map[uuid.UUID]string{}
		dupes []uuid.UUID
		errs  []error
		wg    sync.WaitGroup
		start = make(chan struct{})
		ctx   = testCtx(t)
	)
	for w := range workers {
		owner := "worker-" + string(rune('a'+w))
		wg.Go(func() {
			<-start
			for {
				got, err := s.Claim(ctx, outbox.ClaimParams{Owner: owner, Limit: 5, Lease: time.Hour, Now: now})
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				for _, d := range got {
					if _, ok := seen[d.ID]; ok {
						dupes = append(dupes, d.ID)
					}
					seen[d.ID] = owner
				}
				mu.Unlock()
				if err != nil || len(got) == 0 {
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d claims failed, first: %v", len(errs), errs[0])
	}
	if len(dupes) > 0 {
		t.Fatalf("%d rows were handed to two claimers, e.g. %s", len(dupes), dupes[0])
	}
	if len(seen) != n {
		t.Fatalf("claimed %d distinct rows, want %d", len(seen), n)
	}
	// Rows spread over several claimers: they claimed side by side, not one after another.
	owners := map[string]bool{}
	for _, owner := range seen {
		owners[owner] = true
	}
	if len(owners) < 2 {
		t.Fatalf("one claimer took all %d rows; the claimers did not run side by side", n)
	}
	for id, owner := range seen {
		if d := getDelivery(t, s, id); d.LeaseOwner != owner || d.Attempts != 1 {
			t.Fatalf("row %s: owner %q attempts %d, want %q and 1", id, d.LeaseOwner, d.Attempts, owner)
		}
	}
})

var _ = register("ClaimWithoutLimitOrLeaseLeasesNothing", func(t *testing.T, s outbox.Store) {
	d := acceptDue(t, s, t0)
	now := t0.Add(minutes(1))
	got, err := s.Claim(testCtx(t), outbox.ClaimParams{Owner: "worker-a", Limit: 0, Lease: testLease, Now: now})
	if err != nil || len(got) != 0 {
		t.Fatalf("claim with limit 0 = %v, %v; want nothing and no error", ids(got), err)
	}
	got, err = s.Claim(testCtx(t), outbox.ClaimParams{Owner: "worker-a", Limit: 10, Now: now})
	if err == nil || len(got) != 0 {
		t.Fatalf("claim without a lease = %v, %v; want an error and nothing", ids(got), err)
	}
	if stored := getDelivery(t, s, d.ID); stored.Status != outbox.DeliveryPending || stored.Attempts != 0 || stored.LeaseToken != "" {
		t.Errorf("after the refused claims the delivery is %s, attempts %d, token %q; want it untouched (pending, 0, none)",
			stored.Status, stored.Attempts, stored.LeaseToken)
	}
})
