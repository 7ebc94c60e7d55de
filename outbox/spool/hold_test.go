package spool

import (
	"context"
	"os"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// Under a hold, a segment goes only once it is both replayed and shipped, in either
// order, and its files with it.
func TestHoldKeepsReplayedSegmentUntilShipped(t *testing.T) {
	ctx := context.Background()
	store := storetest.OpenSQLite(t)
	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	s.Hold()

	e, _ := entryWithFile(t)
	if err := s.Append(e); err != nil {
		t.Fatal(err)
	}
	segs, err := s.Unshipped()
	if err != nil || len(segs) != 1 {
		t.Fatalf("unshipped = %v, %v; want one segment", segs, err)
	}
	rep, err := s.Replay(ctx, store, nil)
	if err != nil || rep.Stored != 1 {
		t.Fatalf("replay = %+v, %v; want 1 stored", rep, err)
	}
	st := s.Stats()
	if st.Entries != 0 || st.Unshipped != 1 || st.Segments != 1 {
		t.Fatalf("after replay: %+v; want 0 waiting for the store, 1 unshipped, the segment kept", st)
	}
	if got := spooledFiles(t, dir); len(got) != 1 {
		t.Fatalf("files kept = %v; want the file until shipped", got)
	}
	// A second replay pass does not read the kept segment again.
	if rep, err := s.Replay(ctx, store, nil); err != nil || rep.Duplicates != 0 || rep.Segments != 0 {
		t.Fatalf("second replay = %+v, %v; want nothing done", rep, err)
	}
	if err := s.MarkShipped(segs[0].Seq); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Segments != 0 || st.Unshipped != 0 {
		t.Fatalf("after ship: %+v; want the segment gone", st)
	}
	if _, err := os.Stat(s.segPath(segs[0].Seq)); !os.IsNotExist(err) {
		t.Fatalf("segment file still on disk: %v", err)
	}
	if got := spooledFiles(t, dir); len(got) != 0 {
		t.Fatalf("files left = %v", got)
	}

	// Shipped first, replayed second: replay deletes it.
	if err := s.Append(newEntry("k2")); err != nil {
		t.Fatal(err)
	}
	segs, _ = s.Unshipped()
	if err := s.MarkShipped(segs[0].Seq); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Entries != 1 || st.Unshipped != 0 {
		t.Fatalf("shipped, not replayed: %+v; want 1 waiting for the store", st)
	}
	if _, err := s.Replay(ctx, store, nil); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Segments != 0 {
		t.Fatalf("after replay: %+v; want the segment gone", st)
	}
}

// The size bound releases only segments the store already has.
func TestReleaseReplayedNeverReleasesUnstored(t *testing.T) {
	store := storetest.OpenSQLite(t)
	s := openSpool(t, t.TempDir(), Options{})
	s.Hold()
	if err := s.Append(newEntry("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Replay(context.Background(), store, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(newEntry("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unshipped(); err != nil { // seal the second segment
		t.Fatal(err)
	}
	segs, recs := s.ReleaseReplayed(1 << 40)
	if segs != 1 || recs != 1 {
		t.Fatalf("released %d segments, %d records; want the replayed one only", segs, recs)
	}
	if st := s.Stats(); st.Entries != 1 || st.Unshipped != 1 {
		t.Fatalf("after release: %+v; want the unstored record kept", st)
	}
}

// The last Unhold lets go of what was kept only for the shipper.
func TestUnholdDeletesReplayedSegments(t *testing.T) {
	s := openSpool(t, t.TempDir(), Options{})
	s.Hold()
	s.Hold() // a reload: the new App's shipper holds before the old one lets go
	if err := s.Append(newEntry("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Replay(context.Background(), storetest.OpenSQLite(t), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Unhold(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Segments != 1 {
		t.Fatalf("after one of two unholds: %+v; want the segment kept", st)
	}
	if err := s.Unhold(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Segments != 0 {
		t.Fatalf("after the last unhold: %+v; want the segment deleted", st)
	}
}
