package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

const benchBatch = 64 // items per group commit

var benchKeys int // idempotency keys handed out, each once

// benchAccept builds n fresh submissions with an email and a webhook delivery each; with
// repeat, the last item is the first one again, which sends the batch down the per-item
// pipeline (a submission id twice) and makes it a duplicate.
func benchAccept(n int, repeat bool) []outbox.AcceptItem {
	items := make([]outbox.AcceptItem, n)
	for i := range items {
		opts := []storetest.SubmissionOption{}
		if i%2 == 0 {
			benchKeys++
			opts = append(opts, storetest.WithIdempotencyKey(fmt.Sprint("key-", benchKeys)))
		}
		sub := storetest.NewSubmission("contact", opts...)
		items[i] = outbox.AcceptItem{Submission: sub, Deliveries: []outbox.Delivery{
			storetest.NewDelivery(sub, "sales", "sales@example.com"),
			storetest.NewDelivery(sub, "hook", "https://hooks.example.com/form"),
		}}
	}
	if repeat {
		items[n-1] = items[0]
	}
	return items
}

func checkAccepted(b *testing.B, out []outbox.AcceptOutcome) {
	for i, o := range out {
		if o.Err != nil {
			b.Fatalf("item %d: %v", i, o.Err)
		}
	}
}

// benchBothPaths runs batch once per iteration on a fresh store, for the set statement
// and for the per-item pipeline it falls back to (pipeline true: batch must make the set
// statement unusable). batch stops the timer around its own preparation.
func benchBothPaths(b *testing.B, batch func(b *testing.B, s *pgstore.Store, pipeline bool)) {
	for _, name := range []string{"set", "pipeline"} {
		b.Run(name, func(b *testing.B) {
			s := storetest.OpenPostgresAt(b, storetest.NewPostgresSchema(b))
			b.ReportAllocs()
			for range b.N {
				batch(b, s, name == "pipeline")
			}
		})
	}
}

// BenchmarkAcceptBatch is one group commit of 64 submissions against the test
// PostgreSQL. The pipeline case repeats a submission (a duplicate).
func BenchmarkAcceptBatch(b *testing.B) {
	benchBothPaths(b, func(b *testing.B, s *pgstore.Store, pipeline bool) {
		b.StopTimer()
		items := benchAccept(benchBatch, pipeline)
		b.StartTimer()
		checkAccepted(b, s.AcceptBatch(context.Background(), items))
	})
}

// BenchmarkCompleteBatch is one batch of 64 completions (every fourth one dead, with its
// event) against the test PostgreSQL. The pipeline case adds a stale lease of one
// delivery.
func BenchmarkCompleteBatch(b *testing.B) {
	benchBothPaths(b, func(b *testing.B, s *pgstore.Store, pipeline bool) {
		b.StopTimer()
		cs := claimedCompletions(b, s, pipeline)
		b.StartTimer()
		errs := s.CompleteBatch(context.Background(), cs)
		for i, err := range errs {
			if err != nil && !(pipeline && i == len(cs)-1) {
				b.Fatalf("completion %d: %v", i, err)
			}
		}
	})
}

// claimedCompletions accepts and claims benchBatch deliveries and completes them; with
// stale, one more completion names the first delivery under a lease it does not hold.
func claimedCompletions(b *testing.B, s *pgstore.Store, stale bool) []outbox.Completion {
	ctx := context.Background()
	items := make([]outbox.AcceptItem, benchBatch)
	for i := range items {
		sub := storetest.NewSubmission("contact")
		items[i] = outbox.AcceptItem{Submission: sub, Deliveries: []outbox.Delivery{storetest.NewDelivery(sub, "sales", "sales@example.com")}}
	}
	checkAccepted(b, s.AcceptBatch(ctx, items))
	now := time.Now().Add(time.Hour)
	ds, err := s.Claim(ctx, outbox.ClaimParams{Now: now, Limit: benchBatch, Owner: "bench", Lease: time.Minute})
	if err != nil || len(ds) != benchBatch {
		b.Fatalf("claim: %d deliveries, %v", len(ds), err)
	}
	cs := make([]outbox.Completion, 0, len(ds)+1)
	for i, d := range ds {
		c := outbox.Completion{DeliveryID: d.ID, LeaseToken: d.LeaseToken, Status: outbox.DeliverySent,
			Provider: "smtp", ProviderMessageID: "<m@example.com>", Now: now,
			Attempt: outbox.Attempt{Attempt: d.Attempts, Provider: "smtp", Outcome: outbox.OutcomeSent, HTTPStatus: 250}}
		if i%4 == 3 {
			c.Status, c.LastError = outbox.DeliveryDead, "550 no such user"
			c.Attempt.Outcome, c.Attempt.Error = outbox.OutcomePermanent, "550 no such user"
			c.Event = &outbox.Event{Kind: outbox.EventDeliveryDead}
		}
		cs = append(cs, c)
	}
	if stale {
		c := cs[0]
		c.LeaseToken = "stale"
		cs = append(cs, c)
	}
	return cs
}
