package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

// drillClockSkew runs two workers on one PostgreSQL schema, each with its own pool as
// two Caddy processes have, one clock five minutes behind and one five minutes ahead. A
// Caddy process cannot be given a skewed clock from outside (Go reads the time without
// libc, so faketime has no effect), hence the workers run in this process, with the
// production code path: WorkerConfig.Now skewed, nothing else changed. Both must deliver
// what the database sees as due, exactly once; reclaim leases the database sees as
// expired; and leave alone retries the database sees as two minutes away.
func drillClockSkew(t *testing.T) {
	cfg := storetest.NewPostgresSchema(t)
	behind := storetest.OpenPostgresAt(t, cfg)
	ahead := storetest.OpenPostgresAt(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now, err := behind.DatabaseNow(ctx)
	if err != nil {
		t.Fatal(err)
	}

	const due, later, crashed = 100, 50, 20
	var dueIDs, laterIDs []string
	accept := func(at time.Time) outbox.Delivery {
		sub := storetest.NewSubmission("contact")
		d := storetest.NewDelivery(sub, "email", "sales@example.com")
		d.NextAttemptAt = at
		storetest.MustAccept(t, behind, sub, d)
		return d
	}
	for range crashed {
		dueIDs = append(dueIDs, accept(now.Add(-10*time.Minute)).ID.String())
	}
	// A worker that died with these leased: by the database, its 4m leases ran out a minute ago.
	if ds, err := behind.Claim(ctx, outbox.ClaimParams{Owner: "crashed", Limit: crashed, Lease: 4 * time.Minute,
		Now: now.Add(-5 * time.Minute)}); err != nil || len(ds) != crashed {
		t.Fatalf("lease the crashed worker's deliveries: %v, %d", err, len(ds))
	}
	for range due {
		dueIDs = append(dueIDs, accept(now.Add(-time.Second)).ID.String())
	}
	for range later {
		laterIDs = append(laterIDs, accept(now.Add(2*time.Minute)).ID.String())
	}
	// Posts taken by the two hosts' intake, which plans each delivery due at its host's
	// "now": the Acceptor moves that onto the database's clock, so the ahead host's are
	// due now (not in 5 min) and the behind host's in 2 min (not 3 min ago).
	const posted = 20
	for i, h := range []struct {
		store outbox.Store
		skew  time.Duration
	}{{ahead, 5 * time.Minute}, {behind, -5 * time.Minute}} {
		host := func() time.Time { return time.Now().Add(h.skew) }
		acc := &outbox.Acceptor{Store: h.store, Now: host}
		for range posted {
			sub := storetest.NewSubmission("contact")
			d := storetest.NewDelivery(sub, "email", "sales@example.com")
			d.NextAttemptAt = host()
			ids := &dueIDs
			if i == 1 {
				d.NextAttemptAt = d.NextAttemptAt.Add(2 * time.Minute)
				ids = &laterIDs
			}
			if _, err := acc.Accept(ctx, sub, []outbox.Delivery{d}); err != nil {
				t.Fatal(err)
			}
			*ids = append(*ids, d.ID.String())
		}
	}

	p := fake.New("fake")
	var passes [2]atomic.Int64
	start := time.Now()
	for i, w := range []struct {
		store outbox.Store
		skew  time.Duration
	}{{behind, -5 * time.Minute}, {ahead, 5 * time.Minute}} {
		skew := w.skew
		wk := outbox.NewWorker(outbox.WorkerConfig{Store: w.store, Sender: outbox.Router{Email: p, Webhook: p},
			Lease: 30 * time.Second, PollInterval: 200 * time.Millisecond,
			Now: func() time.Time { return time.Now().Add(skew) }, OnPass: func(int) { passes[i].Add(1) }})
		if err := wk.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = wk.Stop(context.Background()) })
	}
	if err := waitFor(30*time.Second, func() bool { return p.TotalDelivered() >= due+crashed+posted }); err != nil {
		t.Fatalf("%d of %d due deliveries sent: %v", p.TotalDelivered(), due+crashed+posted, err)
	}
	recovery := time.Since(start)
	dupSends, delivered := 0, 0
	for _, id := range dueIDs {
		if p.Delivered(id) > 0 {
			delivered++
		}
		if n := p.Calls(id); n != 1 {
			dupSends += n - 1
			t.Errorf("due delivery %s sent %d times, want once", id, n)
		}
	}
	// Five more passes of each worker, then nothing due later may have been touched.
	seen := [2]int64{passes[0].Load(), passes[1].Load()}
	if err := waitFor(30*time.Second, func() bool {
		return passes[0].Load() >= seen[0]+5 && passes[1].Load() >= seen[1]+5
	}); err != nil {
		t.Fatalf("the workers stopped polling: %v", err)
	}
	var early int
	for _, id := range laterIDs {
		early += p.Calls(id)
	}
	if early != 0 {
		t.Errorf("%d sends of deliveries due in two minutes by the database, want none", early)
	}
	for _, id := range laterIDs {
		d, err := ahead.GetDelivery(ctx, uuid.MustParse(id))
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != outbox.DeliveryPending || d.Attempts != 0 {
			t.Errorf("delivery due later: %s after %d claims, want pending and unclaimed", d.Status, d.Attempts)
		}
	}
	publish(t, drillResult{
		Drill: "clock_skew", Submissions: due + later + crashed + 2*posted, Acknowledged: due + later + crashed + 2*posted,
		Lost: due + crashed + posted - delivered, DuplicateSends: dupSends, RecoverySeconds: recovery.Seconds(),
		Notes: fmt.Sprintf("Two workers on one PostgreSQL schema with clocks 5 min behind and 5 min ahead: %d due and %d "+
			"expired-lease deliveries sent once each, %d due in 2 min by the database left unclaimed; of the posts each "+
			"host's Acceptor took (due times planned by the host's clock), the %d of the host ahead were sent at once and "+
			"the %d of the host behind, planned due in 2 min, were left unclaimed; recovery is until all due ones were sent. "+
			"In-process workers: a Go process's clock cannot be skewed from outside.", due, crashed, later, posted, posted),
	})
}
