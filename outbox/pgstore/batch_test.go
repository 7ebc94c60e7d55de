package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// TestAcceptBatchStoresDeliveriesAsGiven checks what the conformance suite does not reach
// through AcceptBatch, on the set statement and on the pipeline: a delivery's lease and
// sent time stored when set and NULL when zero, an empty payload stored as {}, an extra
// event's empty data as {}, and an empty idempotency key as NULL.
func TestAcceptBatchStoresDeliveriesAsGiven(t *testing.T) {
	for _, path := range []string{"set", "pipeline"} {
		t.Run(path, func(t *testing.T) {
			ctx := context.Background()
			s := storetest.OpenPostgresAt(t, storetest.NewPostgresSchema(t))
			at := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
			sub := storetest.NewSubmission("contact", storetest.WithCreatedAt(at))
			sub.Events = []outbox.Event{{Kind: "schema.drift"}}
			leased := storetest.NewDelivery(sub, "sales", "sales@example.com")
			leased.Status, leased.Attempts, leased.LeaseOwner, leased.LeaseToken = outbox.DeliverySending, 2, "w", "t"
			leased.LockedUntil, leased.SentAt = at.Add(time.Minute), at.Add(time.Second)
			bare := storetest.NewDelivery(sub, "hook", "https://hooks.example.com/form")
			bare.Payload = nil
			other := storetest.NewSubmission("contact", storetest.WithIdempotencyKey("k"))
			items := []outbox.AcceptItem{
				{Submission: sub, Deliveries: []outbox.Delivery{leased, bare}},
				{Submission: other},
			}
			if path == "pipeline" {
				items = append(items, items[1]) // a submission twice: no set statement
			}
			for i, o := range s.AcceptBatch(ctx, items) {
				if o.Err != nil || o.Result.Duplicate != (i == 2) {
					t.Fatalf("item %d: %+v", i, o)
				}
			}

			got, err := s.ListDeliveries(ctx, sub.ID)
			if err != nil || len(got) != 2 {
				t.Fatalf("deliveries: %v, %v", got, err)
			}
			byRoute := map[string]outbox.Delivery{got[0].Route: got[0], got[1].Route: got[1]}
			if d := byRoute["sales"]; !d.LockedUntil.Equal(leased.LockedUntil) || !d.SentAt.Equal(leased.SentAt) ||
				d.Status != outbox.DeliverySending || d.Attempts != 2 || d.LeaseOwner != "w" || d.LeaseToken != "t" {
				t.Errorf("leased delivery stored as %+v", d)
			}
			if d := byRoute["hook"]; string(d.Payload) != "{}" {
				t.Errorf("bare delivery's payload stored as %s", d.Payload)
			}
			// Read back, a zero time and NULL look the same.
			var nulls bool
			if err := s.Pool().QueryRow(ctx, `SELECT locked_until IS NULL AND sent_at IS NULL FROM deliveries WHERE id = $1`,
				[16]byte(bare.ID)).Scan(&nulls); err != nil || !nulls {
				t.Errorf("bare delivery's locked_until and sent_at NULL: %v, %v", nulls, err)
			}
			evs, err := s.ListEvents(ctx, "schema.drift", 0)
			if err != nil || len(evs) != 1 || evs[0].SubmissionID != sub.ID || !evs[0].At.Equal(at) {
				t.Fatalf("extra events: %+v, %v", evs, err)
			}
			if string(evs[0].Data) != "{}" {
				t.Errorf("extra event data = %s, want {}", evs[0].Data)
			}
			var keys []*string
			rows, err := s.Pool().Query(ctx, `SELECT idempotency_key FROM submissions WHERE id = ANY($1) ORDER BY id = $2`,
				[][16]byte{sub.ID, other.ID}, [16]byte(other.ID))
			if err == nil {
				keys, err = pgx.CollectRows(rows, pgx.RowTo[*string])
			}
			if err != nil || len(keys) != 2 || keys[0] != nil || keys[1] == nil || *keys[1] != "k" {
				t.Errorf("idempotency keys (unkeyed, keyed) = %v, %v; want NULL and k", keys, err)
			}
		})
	}
}

// TestCompleteBatchEventIDs checks, on the set statement and on the pipeline, that an
// event's submission and delivery are stored as given, and filled from the delivery when
// unset.
func TestCompleteBatchEventIDs(t *testing.T) {
	for _, path := range []string{"set", "pipeline"} {
		t.Run(path, func(t *testing.T) {
			ctx := context.Background()
			s := storetest.OpenPostgresAt(t, storetest.NewPostgresSchema(t))
			var items []outbox.AcceptItem
			for range 2 {
				sub := storetest.NewSubmission("contact")
				items = append(items, outbox.AcceptItem{Submission: sub, Deliveries: []outbox.Delivery{storetest.NewDelivery(sub, "sales", "sales@example.com")}})
			}
			for i, o := range s.AcceptBatch(ctx, items) {
				if o.Err != nil {
					t.Fatalf("accept %d: %v", i, o.Err)
				}
			}
			now := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
			ds, err := s.Claim(ctx, outbox.ClaimParams{Now: now, Limit: 2, Owner: "w", Lease: time.Minute})
			if err != nil || len(ds) != 2 {
				t.Fatalf("claim: %v, %v", ds, err)
			}
			sent := outbox.Attempt{Outcome: outbox.OutcomeSent}
			given := outbox.Event{Kind: "delivery.note", SubmissionID: uuid.Must(uuid.NewV7()), DeliveryID: uuid.Must(uuid.NewV7())}
			cs := []outbox.Completion{
				{DeliveryID: ds[0].ID, LeaseToken: ds[0].LeaseToken, Status: outbox.DeliverySent, Now: now, Attempt: sent, Event: &given},
				{DeliveryID: ds[1].ID, LeaseToken: ds[1].LeaseToken, Status: outbox.DeliverySent, Now: now, Attempt: sent, Event: &outbox.Event{Kind: "delivery.note"}},
			}
			if path == "pipeline" {
				stale := cs[1]
				stale.LeaseToken = "stale"
				cs = append(cs, stale) // a delivery twice: no set statement
			}
			for i, err := range s.CompleteBatch(ctx, cs) {
				if (err != nil) != (i == 2) {
					t.Fatalf("completion %d: %v", i, err)
				}
			}
			evs, err := s.ListEvents(ctx, "delivery.note", 0)
			if err != nil || len(evs) != 2 {
				t.Fatalf("events: %+v, %v", evs, err)
			}
			got := map[uuid.UUID]uuid.UUID{evs[0].DeliveryID: evs[0].SubmissionID, evs[1].DeliveryID: evs[1].SubmissionID}
			if got[given.DeliveryID] != given.SubmissionID || got[ds[1].ID] != ds[1].SubmissionID {
				t.Errorf("events (delivery: submission) = %v; want %s: %s (given) and %s: %s (filled)", got,
					given.DeliveryID, given.SubmissionID, ds[1].ID, ds[1].SubmissionID)
			}
		})
	}
}
