package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// drillZombie freezes a Caddy process (SIGSTOP) while it holds leases mid-send: the
// webhook receiver holds every request open, so "mid-send" is certain. The receiver then
// answers the frozen process's requests (the sends happened; their sender never learns
// it), the leases (3s) expire and a second instance delivers everything again. When the
// zombie wakes (SIGCONT), its late outcome writes are refused by the lease tokens: no
// attempt of its is recorded, and every delivery shows the second instance's one send.
// The duplicate sends this costs are counted, and bounded by the zombie's in-flight sends,
// the ambiguous attempts.
func drillZombie(t *testing.T) {
	pc := storetest.NewPostgresSchemaName(t)
	recv := newReceiver(t)
	hook := recv.srv.URL + "/hook"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	zombie := newCaddy(t, caddyOpts{Caddyfile: pgCaddyfile(pc.DSN, pc.Schema, hook, "500ms")})
	conn := drillConn(t, ctx, pc.DSN, pc.Schema)

	// Eight submissions, fewer than the zombie's send slots (outbox.DefaultConcurrency). It claims them as
	// its batching allows (see awaitSlots in outbox/worker.go), so it freezes with some
	// of them in flight and the rest still pending.
	const n = 8
	recv.setHold(true)
	for i := range n {
		if err := submit(ctx, []*caddyProc{zombie}, 0, fmt.Sprintf("zombie-%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	owner := fmt.Sprintf("%%-%d-%%", zombie.cmd.Process.Pid)
	leased := func() []string {
		rows, err := conn.Query(ctx, `SELECT id::text FROM deliveries WHERE status = 'sending' AND lease_owner LIKE $1`, owner)
		if err != nil {
			t.Fatalf("leases of the zombie: %v", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("leases of the zombie: %v", err)
		}
		return ids
	}
	var held []string
	if err := waitFor(30*time.Second, func() bool {
		held = leased()
		return len(held) > 0 && recv.holding(held, true)
	}); err != nil {
		t.Fatalf("the zombie never had a send in flight (%d leased): %v\n%s", len(held), err, zombie.Log())
	}

	frozen := time.Now()
	if err := zombie.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zombie.cmd.Process.Signal(syscall.SIGCONT) }) // so that Kill can reap it
	// Only now is what the zombie holds fixed: it may have claimed more between the check
	// above and the signal. Every lease it holds is an ambiguous attempt (one not yet
	// sent is sent when it wakes); the sends already at the receiver are answered below.
	held = leased()
	sentFrozen := 0
	for _, id := range held {
		if recv.holding([]string{id}, true) {
			sentFrozen++
		}
	}
	// The receiver processes the frozen sends: they happened, unknown to their sender.
	recv.setHold(false)
	if err := waitFor(10*time.Second, func() bool { d, _, _ := recv.counts(); return d == sentFrozen }); err != nil {
		t.Fatalf("the receiver did not answer the zombie's requests: %v", err)
	}

	survivor := newCaddy(t, caddyOpts{Caddyfile: pgCaddyfile(pc.DSN, pc.Schema, hook, "500ms")})
	if err := waitFor(60*time.Second, func() bool { return queryDeliveries(t, conn).sent == n }); err != nil {
		t.Fatalf("the survivor did not deliver the zombie's work: %+v: %v\n%s", queryDeliveries(t, conn), err, survivor.Log())
	}
	recovery := time.Since(frozen)

	if err := zombie.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Each of the zombie's sends ends in a write its lease token no longer matches.
	if err := waitFor(30*time.Second, func() bool { return strings.Count(zombie.Log(), "lease lost") >= len(held) }); err != nil {
		t.Fatalf("the zombie did not report %d lost leases after waking: %v\n%s", len(held), err, zombie.Log())
	}
	zombie.Stop()

	for _, id := range held {
		var status, outcome string
		var attempts, rows int
		if err := conn.QueryRow(ctx, `SELECT status, attempts, (SELECT count(*) FROM delivery_attempts WHERE delivery_id = d.id),
			COALESCE((SELECT min(outcome) FROM delivery_attempts WHERE delivery_id = d.id), '')
			FROM deliveries d WHERE id = $1::uuid`, id).Scan(&status, &attempts, &rows, &outcome); err != nil {
			t.Fatalf("delivery %s: %v", id, err)
		}
		if status != "sent" || attempts != 2 || rows != 1 || outcome != "sent" {
			t.Errorf("delivery %s: status=%s attempts=%d attempt rows=%d (%q); want sent, 2 claims, one recorded attempt (the survivor's), none of the zombie's",
				id, status, attempts, rows, outcome)
		}
	}
	var subs, keys int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT idempotency_key) FROM submissions`).Scan(&subs, &keys); err != nil {
		t.Fatal(err)
	}
	if subs != n || keys != n {
		t.Fatalf("%d submissions with %d distinct keys, want %d of each", subs, keys, n)
	}
	distinct, total, _ := recv.counts()
	dupSends := total - distinct
	if distinct != n || dupSends > len(held) {
		t.Fatalf("receiver got %d distinct of %d in %d requests: %d duplicate sends, more than the %d ambiguous attempts",
			distinct, n, total, dupSends, len(held))
	}
	publish(t, drillResult{
		Drill: "zombie", Submissions: n, Acknowledged: n, Lost: n - distinct, DuplicateSubmissions: subs - keys,
		DuplicateSends: dupSends, AmbiguousAttempts: len(held), RecoverySeconds: recovery.Seconds(),
		Notes: fmt.Sprintf("A Caddy process SIGSTOPped with %d of %d webhook sends in flight (3s leases); the receiver answers them while it is frozen, "+
			"a second instance redelivers after the leases expire; after SIGCONT the zombie's outcome writes are refused by the lease "+
			"tokens and none of its attempts is recorded. Recovery is from the freeze to the last delivery recorded sent.", len(held), n),
	})
}
