package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// listen starts s.Listen and returns a channel receiving one value per wake, after the
// LISTEN is in place.
func listen(t *testing.T, s *pgstore.Store) <-chan struct{} {
	t.Helper()
	ready := make(chan struct{}, 1)
	pgstore.SetOnListening(s, func() {
		select {
		case ready <- struct{}{}:
		default:
		}
	})
	wakes := make(chan struct{}, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Listen(ctx, func() { wakes <- struct{}{} }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("listen returned %v after its context ended, want nil", err)
		}
	})
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("LISTEN not in place within 10s")
	}
	return wakes
}

func waitWake(t *testing.T, wakes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-wakes:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no wake-up within 10s", what)
	}
}

func TestBroadcastWakesListenersOfTheSameSchemaOnly(t *testing.T) {
	cfg1 := storetest.NewPostgresSchema(t)
	cfg2 := storetest.NewPostgresSchema(t)
	listener1 := storetest.OpenPostgresAt(t, cfg1)
	sender1 := storetest.OpenPostgresAt(t, cfg1) // another instance sharing the schema
	listener2 := storetest.OpenPostgresAt(t, cfg2)
	sender2 := storetest.OpenPostgresAt(t, cfg2)

	wakes1 := listen(t, listener1)
	wakes2 := listen(t, listener2)

	sender1.Broadcast(context.Background())
	waitWake(t, wakes1, "listener in the broadcasting schema")
	// PostgreSQL delivers notifications to each session in commit order, so had schema 1's
	// notification reached listener 2, it would arrive before schema 2's own.
	sender2.Broadcast(context.Background())
	waitWake(t, wakes2, "listener in the second schema")
	if n := len(wakes2); n != 0 {
		t.Errorf("listener in schema 2 woke %d extra times, want once (schema 1's broadcast leaked)", n)
	}
}

func TestBroadcastIsDebounced(t *testing.T) {
	cfg := storetest.NewPostgresSchema(t)
	listener := storetest.OpenPostgresAt(t, cfg)
	sender := storetest.OpenPostgresAt(t, cfg)
	wakes := listen(t, listener)

	start := time.Now()
	const calls = 2000
	for range calls {
		sender.Broadcast(context.Background())
	}
	elapsed := time.Since(start)
	waitWake(t, wakes, "debounced broadcast")
	// At most one NOTIFY per window while the calls ran, plus the trailing one.
	limit := int64(elapsed/pgstore.NotifyWindow) + 2
	if n := pgstore.NotifySends(sender); n < 1 || n > limit {
		t.Errorf("%d calls in %v sent %d NOTIFYs, want between 1 and %d", calls, elapsed, n, limit)
	}
}

func TestListenReconnectsAndWakesAfterTheConnectionDrops(t *testing.T) {
	cfg := storetest.NewPostgresSchema(t)
	s := storetest.OpenPostgresAt(t, cfg)
	reconnected := make(chan struct{}, 10)
	wakes := listen(t, s)
	pgstore.SetOnListening(s, func() { reconnected <- struct{}{} })

	// Kill the listening backend the way a failover or restart would.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN %' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`,
		cfg.Schema).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminated %d listening backends (err %v), want 1", killed, err)
	}
	select {
	case <-reconnected:
	case <-time.After(15 * time.Second):
		t.Fatal("listener did not reconnect within 15s")
	}
	// Missed notifications are made up for with one wake after the reconnect ...
	waitWake(t, wakes, "reconnect")
	// ... and notifications flow again.
	s.Broadcast(ctx)
	waitWake(t, wakes, "broadcast after reconnect")
}
