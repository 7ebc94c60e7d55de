package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// drillAnswerBound is how long any answer may take: the store's accept deadline (2 s,
// intake/ and spool.go) plus a margin for fsync and a loaded 2-core machine. An answer
// slower than this waited on a TCP timeout instead of spooling.
const drillAnswerBound = 4 * time.Second

// drillPartition runs PostgreSQL in a network namespace of its own and drops every
// packet between it and Caddy for 25 s mid-load: posts during the partition are answered
// queued within the accept deadline, the same Caddy process (no restart) stores them all
// once the packets flow again, and deliveries resume. Recovery is the time from the heal
// until posts are stored straight away again and the spool is empty.
func drillPartition(t *testing.T) {
	const n, rate, partition = 500, 12, 25 * time.Second
	link := newNetnsLink(t)
	pg := newPGClusterIn(t, link.NS, link.NSAddr)
	hook := newReceiver(t)
	cf := strings.NewReplacer("{{DSN}}", pg.DSN(), "{{HOOK}}", hook.srv.URL).Replace(spoolCaddyfile)
	c := newCaddy(t, caddyOpts{Caddyfile: cf})

	load := newDrillLoad("partition", func() string { return c.URL("") }, drillAnswerBound)
	loadDone := load.start(t, c, n, rate, 0.1)
	queuedBefore := load.queued.Load()
	t.Logf("partition at %d answered", load.answered.Load())
	link.Partition()
	partitioned := time.Now()
	select {
	case <-time.After(partition):
	case <-loadDone:
		t.Fatalf("the load ended during the partition: make it longer")
	}
	link.Heal()
	healed := time.Now()
	t.Logf("healed after %s, %d answered, %d queued", healed.Sub(partitioned).Round(time.Second),
		load.answered.Load(), load.queued.Load()-queuedBefore)
	recovery := waitRecovered(t, c, load, healed, 60*time.Second)
	<-loadDone
	load.check(t)
	if got := load.queued.Load() - queuedBefore; got == 0 {
		t.Errorf("no post was answered queued during the partition: the drill did not cut the database off")
	}

	res := pgDrillSettle(t, "partition", pg.DSN(), load, hook, n, 90*time.Second)
	res.RecoverySeconds = recovery
	// The pool recovered in place: this same process now stores straight into the database.
	code, _, status := postKeyed(t, c, "drill-partition-after")
	if code != http.StatusOK || status != "accepted" {
		t.Errorf("post after the partition: %d %q, want 200 accepted (pool not recovered)\n%s", code, status, tail(c.Log(), 4000))
	}
	res.Notes = fmt.Sprintf("%s packet drop (nftables, own network namespace); %d answered queued; slowest answer %s",
		partition, load.queued.Load()-queuedBefore, load.slowest())
	publish(t, res)
}
