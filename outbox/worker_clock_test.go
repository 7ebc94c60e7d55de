package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

// skewedClock is a process clock off from the real one by skew, as on a machine whose
// NTP is broken.
func skewedClock(skew time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(skew) }
}

// Two instances on one PostgreSQL schema, one clock ten minutes behind and one ten
// minutes ahead: the one behind still reclaims a lease the database sees expired, and the
// one ahead neither claims a retry the database sees as not yet due nor writes a lease
// that outlives its length by its skew. Each instance has its own pool, as two Caddy
// processes would.
func TestWorkerFollowsTheDatabaseClock(t *testing.T) {
	cfg := storetest.NewPostgresSchema(t)
	behind := storetest.OpenPostgresAt(t, cfg)
	ahead := storetest.OpenPostgresAt(t, cfg)
	ctx := ctxFor(t)
	dbNow := func() time.Time {
		t.Helper()
		now, err := behind.DatabaseNow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return now
	}
	const lease = 2 * time.Minute
	const skew = 10 * time.Minute

	// A delivery a crashed worker leased: its lease ran out a minute ago by the database.
	now := dbNow()
	expired := acceptOne(t, behind, func(d *outbox.Delivery) { d.NextAttemptAt = now.Add(-5 * time.Minute) })
	if ds, err := behind.Claim(ctx, outbox.ClaimParams{Owner: "crashed", Limit: 1, Lease: 4 * time.Minute,
		Now: now.Add(-5 * time.Minute)}); err != nil || len(ds) != 1 {
		t.Fatalf("lease the delivery of the crashed worker: %v, %d rows", err, len(ds))
	}
	// A retry due in two minutes by the database.
	retry := acceptOne(t, behind, func(d *outbox.Delivery) { d.NextAttemptAt = now.Add(2 * time.Minute) })

	p := fake.New("fake")
	onPass, passes := passSignal()
	w := startWorker(t, outbox.WorkerConfig{Store: behind, Sender: router(p), Lease: lease,
		Now: skewedClock(-skew), OnPass: onPass, Owner: "behind"})
	awaitPass(t, passes)
	waitFor(t, 10*time.Second, "the expired lease reclaimed and sent", statusIs(t, behind, expired.ID, outbox.DeliverySent, 2))
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// A delivery due now, whose send blocks so that its lease can be read.
	due := acceptOne(t, ahead, func(d *outbox.Delivery) { d.NextAttemptAt = dbNow().Add(-time.Second) })
	sending := make(chan struct{})
	release := make(chan struct{})
	p.SetScript(func(ctx context.Context, m providers.Message) error {
		if m.ID == due.ID.String() {
			close(sending)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	})
	onPass, passes = passSignal()
	startWorker(t, outbox.WorkerConfig{Store: ahead, Sender: router(p), Lease: lease,
		Now: skewedClock(skew), OnPass: onPass, Owner: "ahead"})
	if n := awaitPass(t, passes); n != 1 {
		t.Errorf("the instance ahead claimed %d deliveries, want only the one due", n)
	}
	select {
	case <-sending:
	case <-time.After(10 * time.Second):
		t.Fatal("the due delivery was never sent")
	}
	d := getDelivery(t, ahead, due.ID)
	if d.LockedUntil.IsZero() {
		t.Fatal("the sending delivery has no lease")
	}
	if held := d.LockedUntil.Sub(dbNow()); held > lease+5*time.Second {
		t.Errorf("lease runs %v past the database's now, want at most the lease %v", held, lease)
	}
	close(release)
	waitFor(t, 10*time.Second, "the due delivery sent", statusIs(t, ahead, due.ID, outbox.DeliverySent, 1))
	if got := getDelivery(t, ahead, retry.ID); got.Status != outbox.DeliveryPending || got.Attempts != 0 || p.Calls(retry.ID.String()) != 0 {
		t.Errorf("the retry due in two minutes was claimed early: status %s, attempts %d, sends %d",
			got.Status, got.Attempts, p.Calls(retry.ID.String()))
	}
}
