package sqlitestore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func openForTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// insertEvent writes one event of kind in tx, through the ctx it is given.
func insertEvent(ctx context.Context, tx *txStmts, kind string) error {
	_, err := tx.ExecContext(ctx, fq.InsertEvent, kind, nil, nil, "{}", micros(time.Now()))
	return err
}

func countEvents(t *testing.T, s *Store, kind string) int {
	t.Helper()
	evs, err := s.ListEvents(context.Background(), kind, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

// holdCommit holds s's next COMMIT until the returned release runs, and closes held when
// it is held.
func holdCommit(s *Store) (held <-chan struct{}, queued <-chan struct{}, release func()) {
	h, q, r := make(chan struct{}), make(chan struct{}, 64), make(chan struct{})
	first := true
	s.c.hooks.Store(&writeHooks{
		queued: func() { q <- struct{}{} },
		commit: func(int) error {
			if first {
				first = false
				close(h)
				<-r
			}
			return nil
		},
	})
	return h, q, func() { close(r) }
}

// A caller's ctx that ends while its write runs interrupts none of its statements: the
// modernc driver would interrupt SQLite, which rolls back the whole shared transaction.
func TestStatementsIgnoreTheCallersCancel(t *testing.T) {
	s := openForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := s.writeTx(ctx, func(tx *txStmts) error {
		if err := insertEvent(ctx, tx, "test.before"); err != nil {
			return err
		}
		cancel()
		return insertEvent(ctx, tx, "test.after")
	})
	if err != nil {
		t.Fatalf("write whose caller was canceled mid-way: %v", err)
	}
	if n, m := countEvents(t, s, "test.before"), countEvents(t, s, "test.after"); n != 1 || m != 1 {
		t.Errorf("events before / after the cancel = %d / %d, want 1 / 1", n, m)
	}
}

// A write that panics is rolled back alone, its caller panics with the same value, and
// the writes sharing its transaction commit.
func TestPanickingWriteReachesItsCaller(t *testing.T) {
	s := openForTest(t)
	ctx := context.Background()
	held, queued, release := holdCommit(s)
	first := make(chan error, 1)
	go func() { first <- s.writeTx(ctx, func(tx *txStmts) error { return insertEvent(ctx, tx, "test.first") }) }()
	<-queued
	<-held
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		s.writeTx(ctx, func(tx *txStmts) error {
			if err := insertEvent(ctx, tx, "test.panic"); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	<-queued
	beside := make(chan error, 1)
	go func() {
		beside <- s.writeTx(ctx, func(tx *txStmts) error { return insertEvent(ctx, tx, "test.beside") })
	}()
	<-queued
	release()
	if p := <-panicked; p != "boom" {
		t.Errorf("caller recovered %v, want the write's panic", p)
	}
	if err := errors.Join(<-first, <-beside); err != nil {
		t.Errorf("writes beside the panic: %v", err)
	}
	if n := countEvents(t, s, "test.panic"); n != 0 {
		t.Errorf("%d rows of the panicking write, want 0", n)
	}
	if n := countEvents(t, s, "test.beside"); n != 1 {
		t.Errorf("%d rows of the write beside it, want 1", n)
	}
}

// Close lets the writes already queued commit; a write after it fails.
func TestCloseCommitsWhatIsQueued(t *testing.T) {
	s := openForTest(t)
	ctx := context.Background()
	held, queued, release := holdCommit(s)
	done := make(chan error, 3)
	for range 3 {
		go func() { done <- s.writeTx(ctx, func(tx *txStmts) error { return insertEvent(ctx, tx, "test.queued") }) }()
		<-queued
	}
	<-held
	closed := make(chan struct{})
	go func() { s.c.stop(); close(closed) }()
	release()
	<-closed
	for range 3 {
		if err := <-done; err != nil {
			t.Errorf("queued write: %v", err)
		}
	}
	if err := s.writeTx(ctx, func(tx *txStmts) error { return nil }); !errors.Is(err, errClosed) {
		t.Errorf("write after close: err = %v, want errClosed", err)
	}
	if n := countEvents(t, s, "test.queued"); n != 3 {
		t.Errorf("%d queued writes committed, want 3", n)
	}
}

// The writer keeps its statement journals (the savepoints') in memory, not in temporary
// files.
func TestWriterKeepsStatementJournalsInMemory(t *testing.T) {
	s := openForTest(t)
	var mode int
	if err := s.w.QueryRow(`PRAGMA temp_store`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != 2 {
		t.Errorf("writer's temp_store = %d, want 2 (MEMORY)", mode)
	}
}
