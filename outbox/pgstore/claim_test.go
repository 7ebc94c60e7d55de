package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// TestClaimLeavesSynchronousCommitOn: the claim commits asynchronously
// (queries/claim.sql), and that must stay the claim's own: the connection it ran on goes
// back to the pool and carries intake's next commit, which is answered to the visitor
// only once it is durable. With one pooled connection, the claim and the read after it
// share that connection.
func TestClaimLeavesSynchronousCommitOn(t *testing.T) {
	cfg := storetest.NewPostgresSchema(t)
	sep := "?"
	if strings.Contains(cfg.DSN, "?") {
		sep = "&"
	}
	cfg.DSN += sep + "pool_max_conns=1"
	s := storetest.OpenPostgresAt(t, cfg)
	ctx := context.Background()
	sub := storetest.NewSubmission("contact")
	if _, err := outbox.AcceptOne(ctx, s, sub, []outbox.Delivery{storetest.NewDelivery(sub, "sales", "sales@example.com")}); err != nil {
		t.Fatal(err)
	}
	ds, err := s.Claim(ctx, outbox.ClaimParams{Owner: "w", Limit: 10, Lease: time.Minute, Now: time.Now().Add(time.Hour)})
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim: %d deliveries, %v", len(ds), err)
	}
	var setting string
	if err := s.Pool().QueryRow(ctx, `SHOW synchronous_commit`).Scan(&setting); err != nil {
		t.Fatal(err)
	}
	fresh, err := pgx.Connect(ctx, storetest.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	var want string
	if err := fresh.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if setting != want {
		t.Fatalf("after a claim the pooled connection has synchronous_commit = %q, the server's is %q", setting, want)
	}
}

// BenchmarkClaimCommit is one claim of 25 due deliveries while 8 other connections
// commit intake-sized transactions, as the worker claims while intake runs: the claim as
// shipped (asynchronous commit) and the same statement committing synchronously, side by
// side.
func BenchmarkClaimCommit(b *testing.B) {
	for _, mode := range []string{"async", "sync"} {
		b.Run(mode, func(b *testing.B) {
			s := storetest.OpenPostgresAt(b, storetest.NewPostgresSchema(b))
			ctx := context.Background()
			const perClaim = 25
			items := make([]outbox.AcceptItem, 0, perClaim*(b.N+1))
			for range perClaim * (b.N + 1) {
				sub := storetest.NewSubmission("contact")
				items = append(items, outbox.AcceptItem{Submission: sub, Deliveries: []outbox.Delivery{storetest.NewDelivery(sub, "sales", "sales@example.com")}})
			}
			for len(items) > 0 {
				n := min(len(items), 500)
				checkAccepted(b, s.AcceptBatch(ctx, items[:n]))
				items = items[n:]
			}
			syncSQL := strings.Replace(pgstore.ClaimSQL, "AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'", "", 1)
			if syncSQL == pgstore.ClaimSQL {
				b.Fatal("the claim statement has no set_config to take out")
			}
			// Background commits, as intake's group commits make them.
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					sub := storetest.NewSubmission("load")
					_, _ = outbox.AcceptOne(ctx, s, sub, nil)
				}
			}()
			now := time.Now().Add(time.Hour)
			b.ResetTimer()
			for range b.N {
				if mode == "async" {
					ds, err := s.Claim(ctx, outbox.ClaimParams{Owner: "w", Limit: perClaim, Lease: time.Minute, Now: now})
					if err != nil || len(ds) != perClaim {
						b.Fatalf("claim: %d, %v", len(ds), err)
					}
					continue
				}
				rows, err := s.Pool().Query(ctx, syncSQL, now, perClaim, "w", now.Add(time.Minute))
				if err != nil {
					b.Fatal(err)
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			close(stop)
			<-done
		})
	}
}
