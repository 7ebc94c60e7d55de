package sqlitestore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// rawDB opens the file beside the store, to look at it the way an operator's sqlite3
// shell would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenCreatesDirectoryAndUsesWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "outbox.db")
	s := storetest.OpenSQLiteAt(t, path)
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("ping: %v", err)
	}
	var mode string
	if err := rawDB(t, path).QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
}

func TestReopenIsIdempotentAndKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outbox.db")
	s, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	sub := storetest.NewSubmission("contact")
	storetest.MustAccept(t, s, sub, storetest.NewDelivery(sub, "email", "sales@example.com"))
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for range 2 {
		s := storetest.OpenSQLiteAt(t, path)
		if _, err := s.GetSubmission(ctx, sub.ID); err != nil {
			t.Fatalf("submission lost across reopen: %v", err)
		}
	}
	rows, err := rawDB(t, path).Query(`SELECT version FROM form_outbox_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if want := sqlitestore.MigrationVersions(); fmt.Sprint(versions) != fmt.Sprint(want) {
		t.Errorf("recorded migrations = %v, want %v, each once", versions, want)
	}
}

func TestConcurrentAcceptsNeverFailBusy(t *testing.T) {
	// Many writers at once must queue behind the single writer, not fail with SQLITE_BUSY.
	s := storetest.OpenSQLiteAt(t, filepath.Join(t.TempDir(), "outbox.db"))
	ctx := context.Background()
	const n = 64
	acceptConcurrently(t, n, func(int) *sqlitestore.Store { return s })
	evs, err := s.ListEvents(ctx, outbox.EventSubmissionReceived, 0)
	if err != nil || len(evs) != n {
		t.Fatalf("%d submissions recorded (err %v), want %d", len(evs), err, n)
	}
}

// acceptConcurrently accepts n submissions at once, the i-th through store(i), and fails
// t on any error.
func acceptConcurrently(t *testing.T, n int, store func(i int) *sqlitestore.Store) {
	t.Helper()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sub := storetest.NewSubmission("contact", storetest.WithIdempotencyKey(fmt.Sprint("k", i)))
			errs <- acceptWrite(store(i), context.Background(), sub)()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent accept: %v", err)
		}
	}
}

func TestUpgradeReleasesRefusedKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	storetest.CheckUpgradeReleasesRefusedKeys(t, func() outbox.Store {
		s, err := sqlitestore.Open(context.Background(), path)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return s
	}, func(stmts []string) {
		db := rawDB(t, path)
		for _, q := range stmts {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		db.Close()
	})
}
