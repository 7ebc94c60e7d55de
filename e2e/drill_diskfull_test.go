package e2e

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size (mount's syntax, e.g. "64k") on a new directory and
// unmounts it at cleanup, even when the test fails. It needs root.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	needRoot(t, "mounting a small tmpfs")
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs (needs root): %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillDisk writes a file in dir until the filesystem is full and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("filler: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return path
		}
	}
}

// waitRefusedAndHealthSays waits until some posts were answered 503 with Retry-After and
// health is 503 with a reason containing want.
func waitRefusedAndHealthSays(t *testing.T, c *caddyProc, load *drillLoad, want string) string {
	t.Helper()
	var body string
	if err := waitFor(60*time.Second, func() bool {
		var code int
		code, body = c.admin(t, http.MethodGet, "/form_outbox/health")
		return load.refused.Load() >= 5 && code == http.StatusServiceUnavailable && strings.Contains(body, want)
	}); err != nil {
		t.Fatalf("want posts refused (503 Retry-After: %d so far) and health 503 saying %q: %v; health: %s\n%s",
			load.refused.Load(), want, err, body, tail(c.Log(), 3000))
	}
	return body
}

// waitHealthy waits until health answers 200 again.
func waitHealthy(t *testing.T, c *caddyProc) {
	t.Helper()
	var body string
	if err := waitFor(30*time.Second, func() bool {
		var code int
		code, body = c.admin(t, http.MethodGet, "/form_outbox/health")
		return code == http.StatusOK
	}); err != nil {
		t.Errorf("health not 200 after space returned: %v; %s", err, body)
	}
}

// drillDiskFullSpool fills the spool's filesystem (a 64 KiB tmpfs) while PostgreSQL
// is down: posts the spool can hold are answered queued, the rest 503 with Retry-After,
// health says the disk is full, and once PostgreSQL is back the spool drains, every
// acknowledged post is stored once and the spool takes submissions again.
func drillDiskFullSpool(t *testing.T) {
	const n, rate = 150, 15
	spoolDir := mountTmpfs(t, "64k")
	pg := newPGCluster(t)
	hook := newReceiver(t)
	cf := strings.NewReplacer("{{DSN}}", pg.DSN(), "{{HOOK}}", hook.srv.URL).Replace(spoolCaddyfile)
	cf = strings.Replace(cf, "\t\tworker {", "\t\tspool "+spoolDir+"\n\t\tworker {", 1)
	c := newCaddy(t, caddyOpts{Caddyfile: cf})

	pg.Kill()
	load := newDrillLoad("disk-full-spool", func() string { return c.URL("") }, drillAnswerBound)
	loadDone := load.start(t, c, n, rate, 0)
	health := waitRefusedAndHealthSays(t, c, load, "no space left on device")
	t.Logf("spool full after %d queued; health: %s", load.queued.Load(), health)

	pg.Start()
	back := time.Now()
	recovery := waitRecovered(t, c, load, back, 60*time.Second)
	<-loadDone
	load.check(t)
	res := pgDrillSettle(t, "disk-full-spool", pg.DSN(), load, hook, n, 60*time.Second)
	res.RecoverySeconds = recovery
	waitHealthy(t, c)

	// Nothing corrupt: the drained spool takes (and later replays) a submission again.
	pg.Kill()
	code, id, status := postKeyed(t, c, "drill-disk-full-spool-after")
	if code != http.StatusOK || status != "queued" {
		t.Fatalf("post with the database down after the spool drained: %d %q, want 200 queued\n%s", code, status, tail(c.Log(), 3000))
	}
	pg.Start()
	if err := waitFor(60*time.Second, func() bool { return storedIDs(pg.DSN())[id] }); err != nil {
		t.Errorf("the submission spooled after the drill was not stored: %v", err)
	}
	res.Notes = fmt.Sprintf("spool on a 64 KiB tmpfs, PostgreSQL down: %d answered queued, %d answered 503 with Retry-After (retried with the same key); slowest answer %s",
		load.queued.Load(), load.refused.Load(), load.slowest())
	publish(t, res)
}

// diskFullSQLiteCaddyfile is spoolCaddyfile with the SQLite database and the spool on
// one small filesystem: when it is full neither can take a submission.
// A delivery whose "sent" could not be written on the full disk stays leased until its
// lease expires (2 minutes by default): a short lease bounds the drill.
var diskFullSQLiteCaddyfile = strings.NewReplacer(`storage postgres "{{DSN}}"`, "storage sqlite {{MNT}}/forms.db\n\t\tspool {{MNT}}/spool",
	"\t\t\tpoll_interval 500ms", "\t\t\tpoll_interval 500ms\n\t\t\tlease 10s").Replace(spoolCaddyfile)

// drillDiskFullSQLite fills the filesystem that holds the SQLite database and the
// spool mid-load: every post is acknowledged and durable or answered 503 with
// Retry-After, health says why, and once space returns the retried posts are stored, the
// database passes integrity_check and every delivery is sent.
func drillDiskFullSQLite(t *testing.T) {
	const n, rate = 200, 15
	mnt := mountTmpfs(t, "16m")
	hook := newReceiver(t)
	cf := strings.NewReplacer("{{MNT}}", mnt, "{{HOOK}}", hook.srv.URL).Replace(diskFullSQLiteCaddyfile)
	c := newCaddy(t, caddyOpts{Caddyfile: cf})

	load := newDrillLoad("disk-full-sqlite", func() string { return c.URL("") }, drillAnswerBound)
	loadDone := load.start(t, c, n, rate, 0.2)
	filler := fillDisk(t, mnt)
	full := time.Now()
	health := waitRefusedAndHealthSays(t, c, load, "no space left on device")
	t.Logf("disk full after %d acknowledged; health: %s", len(load.ackedKeys()), health)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	t.Logf("space returned after %s", freed.Sub(full).Round(time.Millisecond))
	recovery := waitRecovered(t, c, load, freed, 60*time.Second)
	<-loadDone
	load.check(t)
	waitHealthy(t, c)

	db := openSQLite(t, filepath.Join(mnt, "forms.db"))
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check after space returned: %q %v", check, err)
	}
	acked := load.ackedKeys()
	var stored map[string]int
	if err := waitFor(60*time.Second, func() bool {
		stored = sqliteKeys(t, db)
		distinct, _, _ := hook.counts()
		return distinct >= len(stored) && countWhere(t, db, `SELECT count(*) FROM deliveries WHERE status <> 'sent'`) == 0
	}); err != nil {
		distinct, _, _ := hook.counts()
		t.Errorf("not settled: %v (stored %d, delivered %d, deliveries not sent %d)", err, len(stored), distinct,
			countWhere(t, db, `SELECT count(*) FROM deliveries WHERE status <> 'sent'`))
	}
	lost, dup := lostAndDuplicated(acked, stored)
	distinct, total, _ := hook.counts()
	res := drillResult{Drill: "disk-full-sqlite", Submissions: n, Acknowledged: len(acked), Lost: lost,
		DuplicateSubmissions: dup, DuplicateSends: total - distinct,
		AmbiguousAttempts: countWhere(t, db, ambiguousAttemptsQuery),
		RecoverySeconds:   recovery,
		Notes: fmt.Sprintf("SQLite database and spool on one 16 MiB tmpfs, filled mid-load: %d answered 503 with Retry-After (retried with the same key), integrity_check ok after space returned; slowest answer %s",
			load.refused.Load(), load.slowest())}
	publish(t, res)
}

// sqliteKeys counts the stored submissions per idempotency key.
func sqliteKeys(t *testing.T, db *sql.DB) map[string]int {
	t.Helper()
	rows, err := db.Query(`SELECT idempotency_key FROM submissions`)
	if err != nil {
		t.Fatalf("read submissions: %v", err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return storedKeyCounts(keys)
}

func countWhere(t *testing.T, db *sql.DB, q string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
