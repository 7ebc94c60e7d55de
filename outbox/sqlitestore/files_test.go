package sqlitestore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// sqliteFiles are the files SQLite keeps for one database in WAL mode.
func sqliteFiles(path string) []string {
	return []string{path, path + "-wal", path + "-shm"}
}

// An explicitly placed database holds visitors' data: the file and the WAL and shared
// memory files SQLite creates beside it must be readable by the owner only, whatever
// directory the operator chose.
func TestOpenCreatesDatabaseFilesOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "forms.db")
	s := storetest.OpenSQLiteAt(t, path)
	sub := storetest.NewSubmission("contact")
	storetest.MustAccept(t, s, sub, storetest.NewDelivery(sub, "email", "sales@example.com"))
	for _, f := range sqliteFiles(path) {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatalf("stat %s: %v", f, err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s has mode %v, want -rw-------", filepath.Base(f), got)
		}
	}
}

// An existing database keeps the mode its operator gave it: Open creates files, it does
// not change what is there.
func TestOpenKeepsModeOfExistingDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "forms.db")
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	storetest.OpenSQLiteAt(t, path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o640 {
		t.Errorf("reopened database has mode %v, want the operator's -rw-r-----", got)
	}
}

// marked is a submission whose field value, idempotency key and webhook payload carry a
// marker that appears nowhere else, so the raw database files can be searched for it.
func marked(t *testing.T, s outbox.Store, opts ...storetest.SubmissionOption) (*outbox.Submission, []byte) {
	t.Helper()
	marker := []byte("visitor-secret-" + uuid.NewString())
	opts = append(opts, storetest.WithIdempotencyKey(string(marker)+"-key"),
		storetest.WithFields("name", "Ada", "message", string(marker)))
	sub := storetest.NewSubmission("contact", opts...)
	storetest.MustAccept(t, s, sub, storetest.NewDelivery(sub, "hook", "https://crm.example.com/hook"))
	return sub, marker
}

// assertMarkers fails t unless each marker in gone is absent from, and each in kept is
// present in, the raw bytes of the database's files taken together.
func assertMarkers(t *testing.T, path string, gone, kept [][]byte) {
	t.Helper()
	var all []byte
	for _, f := range sqliteFiles(path) {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, m := range gone {
			if bytes.Contains(b, m) {
				t.Errorf("%s still holds erased data %q", filepath.Base(f), m)
			}
		}
		all = append(all, b...)
	}
	for _, m := range kept {
		if !bytes.Contains(all, m) {
			t.Errorf("the database files lack %q, which was not erased: the search proves nothing", m)
		}
	}
}

// checkpoint moves the WAL into the main file, as SQLite does on its own from time to
// time, so a test can place data in either file.
func checkpoint(t *testing.T, path string) {
	t.Helper()
	if _, err := rawDB(t, path).Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
}

// An erasure request removes the visitor's data from the bytes on disk, not only from
// query results: neither the main file (where a checkpoint put older data) nor the WAL
// (where recent data waits) may keep the data, payload or key of an erased submission.
func TestDeleteSubmissionLeavesNoBytesInFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	s := storetest.OpenSQLiteAt(t, path)
	old, oldMarker := marked(t, s)
	checkpoint(t, path)
	recent, recentMarker := marked(t, s)
	_, keptMarker := marked(t, s)
	for _, id := range []uuid.UUID{old.ID, recent.ID} {
		if err := s.DeleteSubmission(context.Background(), id, time.Now()); err != nil {
			t.Fatalf("erase %s: %v", id, err)
		}
	}
	assertMarkers(t, path, [][]byte{oldMarker, recentMarker}, [][]byte{keptMarker})
}

// Retention is an erasure too: what it prunes leaves the files.
func TestPruneLeavesNoBytesInFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	s := storetest.OpenSQLiteAt(t, path)
	long := time.Now().Add(-48 * time.Hour).UTC().Truncate(time.Microsecond)
	_, oldMarker := marked(t, s, storetest.WithCreatedAt(long), storetest.WithStatus(outbox.SubmissionSpam, "honeypot"))
	checkpoint(t, path)
	_, recentMarker := marked(t, s, storetest.WithCreatedAt(long), storetest.WithStatus(outbox.SubmissionSpam, "honeypot"))
	_, keptMarker := marked(t, s)
	res, err := s.Prune(context.Background(), time.Now().Add(-time.Hour), 100)
	if err != nil || res.Submissions != 2 {
		t.Fatalf("prune: %+v, %v; want 2 submissions", res, err)
	}
	assertMarkers(t, path, [][]byte{oldMarker, recentMarker}, [][]byte{keptMarker})
}
