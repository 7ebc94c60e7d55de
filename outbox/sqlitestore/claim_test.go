package sqlitestore_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// TestClaimLeavesSynchronousFull: the claim commits with synchronous=NORMAL
// (lazyWriteTx), and that must stay the claim's own: the writer's connection then
// commits intake's submissions, answered only once they survive a power loss.
func TestClaimLeavesSynchronousFull(t *testing.T) {
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sub := storetest.NewSubmission("contact")
	if _, err := outbox.AcceptOne(ctx, s, sub, []outbox.Delivery{storetest.NewDelivery(sub, "sales", "sales@example.com")}); err != nil {
		t.Fatal(err)
	}
	ds, err := s.Claim(ctx, outbox.ClaimParams{Owner: "w", Limit: 10, Lease: time.Minute, Now: time.Now().Add(time.Hour)})
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim: %d deliveries, %v", len(ds), err)
	}
	if v, err := sqlitestore.WriterSynchronous(s); err != nil || v != 2 {
		t.Fatalf("after a claim the writer's synchronous = %d (%v), want 2 (FULL)", v, err)
	}
}

// BenchmarkClaimCommit is one claim of 25 due deliveries while another goroutine keeps
// the single writer busy with intake commits, as the worker claims while intake runs: the
// claim as shipped (no WAL fsync at its commit) and the same claim committing with
// synchronous=FULL, side by side. intake-commits/s is what the other writer got done
// meanwhile.
func BenchmarkClaimCommit(b *testing.B) {
	for _, mode := range []string{"shipped", "full"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			s, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "outbox.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const perClaim = 25
			items := make([]outbox.AcceptItem, 0, perClaim*(b.N+1))
			for range perClaim * (b.N + 1) {
				sub := storetest.NewSubmission("contact")
				items = append(items, outbox.AcceptItem{Submission: sub, Deliveries: []outbox.Delivery{storetest.NewDelivery(sub, "sales", "sales@example.com")}})
			}
			for len(items) > 0 {
				n := min(len(items), 500)
				for i, o := range s.AcceptBatch(ctx, items[:n]) {
					if o.Err != nil {
						b.Fatalf("accept %d: %v", i, o.Err)
					}
				}
				items = items[n:]
			}
			stop, done := make(chan struct{}), make(chan struct{})
			var accepts atomic.Int64
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					sub := storetest.NewSubmission("load")
					if _, err := outbox.AcceptOne(ctx, s, sub, nil); err == nil {
						accepts.Add(1)
					}
				}
			}()
			p := outbox.ClaimParams{Owner: "w", Limit: perClaim, Lease: time.Minute, Now: time.Now().Add(time.Hour)}
			b.ResetTimer()
			start, before := time.Now(), accepts.Load()
			for range b.N {
				claim := s.Claim
				if mode == "full" {
					claim = func(ctx context.Context, p outbox.ClaimParams) ([]outbox.Delivery, error) {
						return sqlitestore.ClaimSynchronous(ctx, s, p)
					}
				}
				if ds, err := claim(ctx, p); err != nil || len(ds) != perClaim {
					b.Fatalf("claim: %d, %v", len(ds), err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(accepts.Load()-before)/time.Since(start).Seconds(), "intake-commits/s")
			close(stop)
			<-done
		})
	}
}
