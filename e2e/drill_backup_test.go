package e2e

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/internal/s3test"
)

// TestDrillBackup: the host is lost, or some posts never reached the database; the
// off-host backups (outbox/backup) bring them back. SQLite, a gofakes3 bucket on loopback.
func TestDrillBackup(t *testing.T) {
	t.Parallel()
	runDrills(t, []namedDrill{
		{"HostLost", drillHostLost},
		{"WindowReplay", drillWindowReplay},
	})
}

// drillHostLost: the host is lost with its data directory (SQLite file and spool); a new
// Caddy and `restore` bring every answered submission back and plan its deliveries again;
// a second restore stores nothing.
func drillHostLost(t *testing.T) {
	s3 := s3test.Start(t, "forms")
	hook := newReceiver(t)
	old := startBackupCaddy(t, s3, hook)
	const n = 30
	ids := postAccepted(t, old, "lost", n)
	if err := waitFor(10*time.Second, func() bool { return backedUp(t, s3) == n }); err != nil {
		t.Fatalf("the bucket has %d of %d records: %v\n%s", backedUp(t, s3), n, err, old.Log())
	}
	if err := waitFor(10*time.Second, func() bool { d, total, _ := hook.counts(); return d == n && total == n }); err != nil {
		d, total, _ := hook.counts()
		t.Fatalf("webhooks before the loss: %d distinct, %d sent, want %d", d, total, n)
	}

	old.Kill()
	if err := os.RemoveAll(filepath.Join(old.dir, "data")); err != nil {
		t.Fatal(err)
	}
	lostAt := time.Now()
	fresh := startBackupCaddy(t, s3, hook)

	dry := restoreCLI(t, s3, fresh, "--dry-run")
	if !strings.Contains(dry, fmt.Sprintf("would store: %d ", n)) || len(sqliteIDs(t, fresh)) != 0 {
		t.Fatalf("dry run:\n%s\nstored %d", dry, len(sqliteIDs(t, fresh)))
	}
	out := restoreCLI(t, s3, fresh)
	if !strings.Contains(out, fmt.Sprintf("stored: %d ", n)) {
		t.Fatalf("restore:\n%s", out)
	}
	for _, id := range ids {
		if !strings.Contains(out, "stored "+id+" form=contact") {
			t.Fatalf("submission %s not restored:\n%s", id, out)
		}
	}
	if again := restoreCLI(t, s3, fresh); !strings.Contains(again, "stored: 0 ") || !strings.Contains(again, fmt.Sprintf("already stored: %d ", n)) {
		t.Fatalf("second restore:\n%s", again)
	}
	// Their deliveries were planned again: each webhook is sent a second time, with the
	// same webhook-id (docs/operations.md, "Off-host backups").
	if err := waitFor(20*time.Second, func() bool {
		d, total, dups := hook.counts()
		return d == n && total == 2*n && len(dups) == n
	}); err != nil {
		d, total, dups := hook.counts()
		t.Fatalf("webhooks after the restore: %d distinct, %d sent (%v); want each of %d twice\n%s", d, total, dups, n, fresh.Log())
	}
	recovery := time.Since(lostAt)
	_, total, _ := hook.counts()
	publish(t, drillResult{
		Drill: "host_lost", Submissions: n, Acknowledged: n, Lost: n - countIn(sqliteIDs(t, fresh), ids),
		DuplicateSubmissions: len(sqliteIDs(t, fresh)) - countIn(sqliteIDs(t, fresh), ids),
		DuplicateSends:       total - n,
		// Each webhook sent before the loss: its outcome went with the host and is in no
		// backup record, so the restore plans it again.
		AmbiguousAttempts: n,
		RecoverySeconds:   recovery.Seconds(),
		Notes: fmt.Sprintf("SQLite host with `backup` to a gofakes3 bucket on loopback; %d posts answered and shipped, their webhooks sent; "+
			"the process killed and its data directory (database and spool) deleted; a new Caddy and `caddy form-outbox restore` "+
			"stored all %d (a second restore stored 0) and planned their webhooks again, so each was sent twice with the same "+
			"webhook-id: a send before the loss is counted ambiguous because its outcome is in no backup. "+
			"Recovery: from the loss until every restored webhook was sent.", n, n),
	})
}

// drillWindowReplay: a third of the posts never reached the database (their rows removed
// by hand, as after a store fault past the journal); a restore over a window spanning
// before and after stores exactly those, and a second one nothing.
func drillWindowReplay(t *testing.T) {
	s3 := s3test.Start(t, "forms")
	hook := newReceiver(t)
	c := startBackupCaddy(t, s3, hook)
	const n = 30
	ids := postAccepted(t, c, "gap", n)
	if err := waitFor(10*time.Second, func() bool { return backedUp(t, s3) == n }); err != nil {
		t.Fatalf("backed up %d of %d", backedUp(t, s3), n)
	}
	if err := waitFor(10*time.Second, func() bool { d, _, _ := hook.counts(); return d == n }); err != nil {
		t.Fatal("webhooks not sent before the gap")
	}
	var missing []string
	for i, id := range ids {
		if i%3 == 1 {
			missing = append(missing, id)
		}
	}
	removeRows(t, c, missing)
	if got := len(sqliteIDs(t, c)); got != n-len(missing) {
		t.Fatalf("after removing rows: %d stored, want %d", got, n-len(missing))
	}
	start := time.Now()
	out := restoreCLI(t, s3, c, "--form", "contact")
	recovery := time.Since(start)
	if !strings.Contains(out, fmt.Sprintf("stored: %d ", len(missing))) || !strings.Contains(out, fmt.Sprintf("already stored: %d ", n-len(missing))) {
		t.Fatalf("restore:\n%s", out)
	}
	for _, id := range missing {
		if !strings.Contains(out, "stored "+id) {
			t.Fatalf("restore did not store %s:\n%s", id, out)
		}
	}
	if again := restoreCLI(t, s3, c); !strings.Contains(again, "stored: 0 ") {
		t.Fatalf("second restore:\n%s", again)
	}
	stored := sqliteIDs(t, c)
	// The restored ones' webhooks are sent again (their first send's record went with the rows).
	if err := waitFor(20*time.Second, func() bool { _, total, _ := hook.counts(); return total == n+len(missing) }); err != nil {
		_, total, _ := hook.counts()
		t.Fatalf("webhooks after the restore: %d, want %d", total, n+len(missing))
	}
	_, total, _ := hook.counts()
	publish(t, drillResult{
		Drill: "window_replay", Submissions: n, Acknowledged: n, Lost: n - countIn(stored, ids),
		DuplicateSubmissions: len(stored) - countIn(stored, ids),
		DuplicateSends:       total - n,
		AmbiguousAttempts:    len(missing), // their send records went with the rows
		RecoverySeconds:      recovery.Seconds(),
		Notes: fmt.Sprintf("SQLite host with `backup` to a gofakes3 bucket on loopback; %d posts answered and shipped, then the rows of "+
			"every third (%d) removed from the database by hand; `caddy form-outbox restore --form contact` over a window from an hour "+
			"before to after the posts stored exactly those %d and a second run stored 0. Their webhooks were sent again (their "+
			"send records went with the rows). Recovery: the restore's run time.", n, len(missing), len(missing)),
	})
}

// removeRows deletes submissions (and, by foreign key, their deliveries) without the
// erasure event DeleteSubmission writes: the rows simply never arrived.
func removeRows(t *testing.T, p *caddyProc, ids []string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+dbPath(p)+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range ids {
		u := uuid.MustParse(id)
		if _, err := db.Exec(`DELETE FROM submissions WHERE id = ? OR id = ?`, id, u[:]); err != nil {
			t.Fatal(err)
		}
	}
}

func countIn(set map[string]bool, ids []string) int {
	n := 0
	for _, id := range ids {
		if set[id] {
			n++
		}
	}
	return n
}
