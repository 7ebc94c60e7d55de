package spool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

func newEntry(key string) Entry {
	sub := storetest.NewSubmission("contact", storetest.WithIdempotencyKey(key))
	return Entry{Submission: *sub, Deliveries: []outbox.Delivery{
		storetest.NewDelivery(sub, "email-0", "team@example.com"),
		storetest.NewDelivery(sub, "webhook-0", "https://hooks.example.com/in"),
	}}
}

func openSpool(t *testing.T, dir string, opts Options) *Spool {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("open spool: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func appendN(t *testing.T, s *Spool, n int) []Entry {
	t.Helper()
	var out []Entry
	for i := 0; i < n; i++ {
		e := newEntry(uuid.NewString())
		if err := s.Append(e); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		out = append(out, e)
	}
	return out
}

// segmentFiles lists the segment files on disk, oldest first.
func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "seg-*.spool"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func corruptFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, corruptDir, "*.bad"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// receivedEvents counts submission.received events: Accept writes exactly one per stored
// submission, so this counts how many times anything was really written.
func receivedEvents(t *testing.T, st outbox.Store) int {
	t.Helper()
	evs, err := st.ListEvents(context.Background(), outbox.EventSubmissionReceived, 1_000_000)
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	return len(evs)
}

func TestEntryRoundTripsThroughAFrame(t *testing.T) {
	e := newEntry("k-1")
	e.Submission.Test = true
	e.Submission.Reason = "x"
	e.Submission.Events = []outbox.Event{{Kind: outbox.EventSchemaDrift, SubmissionID: e.Submission.ID,
		Data: json.RawMessage(`{"field":"extra"}`), At: e.Submission.CreatedAt}}
	e.Submission.Signals = []outbox.Signal{{Name: "time_trap_too_fast", Weight: 4, Evidence: "posted 1s after issue"}}
	payload, err := encodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	recs, bad := parseSegment(frame(payload))
	if len(bad) != 0 || len(recs) != 1 {
		t.Fatalf("parse: %d records, bad %v", len(recs), bad)
	}
	got := recs[0].Entry
	// The decoder only fills what replay needs; compare what the store will write.
	want := e
	for i := range want.Deliveries {
		d := &want.Deliveries[i]
		d.UpdatedAt = time.Time{}
	}
	if !reflect.DeepEqual(got.Submission, want.Submission) {
		t.Errorf("submission:\n got %+v\nwant %+v", got.Submission, want.Submission)
	}
	if !reflect.DeepEqual(got.Deliveries, want.Deliveries) {
		t.Errorf("deliveries:\n got %+v\nwant %+v", got.Deliveries, want.Deliveries)
	}
}

func TestDamagedFrameCostsOnlyItself(t *testing.T) {
	var seg []byte
	var keys []string
	var starts []int // frame i spans starts[i]..starts[i+1]
	for i := 0; i < 3; i++ {
		e := newEntry(uuid.NewString())
		keys = append(keys, e.Submission.IdempotencyKey)
		starts = append(starts, len(seg))
		seg = append(seg, frame(mustEncode(t, e))...)
	}
	starts = append(starts, len(seg))
	type hit struct{ frame, at int }
	cases := map[string]hit{
		"magic":    {0, 1},
		"length":   {1, starts[1] + 5},
		"checksum": {1, starts[1] + 9},
		"payload":  {2, starts[2] + headerSize + 20},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := append([]byte(nil), seg...)
			b[c.at] ^= 0x40
			recs, bad := parseSegment(b)
			if len(bad) != 1 {
				t.Fatalf("bad ranges = %v, want 1", bad)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.Entry.Submission.IdempotencyKey)
			}
			damaged := c.frame
			var want []string
			for i, k := range keys {
				if i != damaged {
					want = append(want, k)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("records = %v, want %v", got, want)
			}
			if bad[0].Off != starts[damaged] || bad[0].End != starts[damaged+1] {
				t.Fatalf("bad range %d..%d, want %d..%d", bad[0].Off, bad[0].End, starts[damaged], starts[damaged+1])
			}
		})
	}
}

func mustEncode(t *testing.T, e Entry) []byte {
	t.Helper()
	p, err := encodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUnknownVersionIsKeptAsideNotGuessed(t *testing.T) {
	recs, bad := parseSegment(frame([]byte(`{"v":2,"submission":{}}`)))
	if len(recs) != 0 || len(bad) != 1 {
		t.Fatalf("records %d, bad %v", len(recs), bad)
	}
}

func TestTornTailIsSkippedKeptAsideAndDoesNotBlock(t *testing.T) {
	for _, cut := range []int{1, headerSize - 1, headerSize + 3, -1} {
		dir := t.TempDir()
		s := openSpool(t, dir, Options{})
		es := appendN(t, s, 3)
		s.Close()
		seg := segmentFiles(t, dir)[0]
		info, err := os.Stat(seg)
		if err != nil {
			t.Fatal(err)
		}
		third := int(info.Size()) - len(frame(mustEncode(t, es[2])))
		keep := third + cut
		if cut < 0 {
			keep = int(info.Size()) - 1
		}
		// A crash in the middle of the third append.
		if err := os.Truncate(seg, int64(keep)); err != nil {
			t.Fatal(err)
		}

		s2 := openSpool(t, dir, Options{})
		if got := s2.Stats().Entries; got != 2 {
			t.Fatalf("cut %d: entries after reopen = %d, want 2", cut, got)
		}
		// The reopened spool never writes after the torn bytes.
		later := newEntry("later")
		if err := s2.Append(later); err != nil {
			t.Fatal(err)
		}
		if n := len(segmentFiles(t, dir)); n != 2 {
			t.Fatalf("cut %d: %d segments, want a fresh one beside the torn one", cut, n)
		}
		st := storetest.OpenSQLite(t)
		rep, err := s2.Replay(context.Background(), st, nil)
		if err != nil {
			t.Fatalf("cut %d: replay: %v", cut, err)
		}
		if rep.Stored != 3 || rep.Corrupt != 1 || rep.Remaining != 0 || rep.Segments != 2 {
			t.Fatalf("cut %d: report %+v", cut, rep)
		}
		for _, e := range []Entry{es[0], es[1], later} {
			if _, err := st.GetSubmission(context.Background(), e.Submission.ID); err != nil {
				t.Fatalf("cut %d: submission %s not stored: %v", cut, e.Submission.ID, err)
			}
		}
		if _, err := st.GetSubmission(context.Background(), es[2].Submission.ID); !errors.Is(err, outbox.ErrNotFound) {
			t.Fatalf("cut %d: the torn record must not be stored, got %v", cut, err)
		}
		bad := corruptFiles(t, dir)
		if len(bad) != 1 {
			t.Fatalf("cut %d: corrupt files %v", cut, bad)
		}
		kept, err := os.ReadFile(bad[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(kept) != keep-third {
			t.Fatalf("cut %d: kept %d bytes, want the %d torn ones", cut, len(kept), keep-third)
		}
		if n := len(segmentFiles(t, dir)); n != 0 {
			t.Fatalf("cut %d: %d segments left after a full replay", cut, n)
		}
	}
}

func TestReplayingTwiceStoresOnce(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	es := appendN(t, s, 10)
	s.Close()
	seg := segmentFiles(t, dir)[0]
	saved, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			store := st(t)
			for pass := 1; pass <= 2; pass++ {
				// The same segment again, as after a crash between the last Accept and the
				// deletion of the segment.
				if err := os.WriteFile(seg, saved, 0o600); err != nil {
					t.Fatal(err)
				}
				s := openSpool(t, dir, Options{})
				rep, err := s.Replay(context.Background(), store, nil)
				if err != nil {
					t.Fatalf("pass %d: %v", pass, err)
				}
				wantStored, wantDup := 10, 0
				if pass == 2 {
					wantStored, wantDup = 0, 10
				}
				if rep.Stored != wantStored || rep.Duplicates != wantDup {
					t.Fatalf("pass %d: report %+v", pass, rep)
				}
				s.Close() // as the process that replayed it exits
			}
			if n := receivedEvents(t, store); n != len(es) {
				t.Fatalf("%d submissions written, want %d", n, len(es))
			}
			for _, e := range es {
				ds, err := store.ListDeliveries(context.Background(), e.Submission.ID)
				if err != nil || len(ds) != 2 {
					t.Fatalf("deliveries of %s: %d, %v", e.Submission.ID, len(ds), err)
				}
				for _, d := range ds {
					if d.ID != e.Deliveries[0].ID && d.ID != e.Deliveries[1].ID {
						t.Fatalf("delivery id %s was not the spooled one", d.ID)
					}
				}
			}
		})
	}
}

func TestReplayOfAHalfStoredSegment(t *testing.T) {
	s := openSpool(t, t.TempDir(), Options{})
	es := appendN(t, s, 10)
	store := storetest.OpenSQLite(t)
	// Half reached the store before it went away (or a replay stopped half way).
	for _, e := range es[:5] {
		sub := e.Submission
		if _, err := outbox.AcceptOne(context.Background(), store, &sub, e.Deliveries); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := s.Replay(context.Background(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stored != 5 || rep.Duplicates != 5 || rep.Remaining != 0 {
		t.Fatalf("report %+v", rep)
	}
	if n := receivedEvents(t, store); n != 10 {
		t.Fatalf("%d submissions written, want 10", n)
	}
}

// recordingStore fails each accepted item after failAfter successes (when set) and
// records ids.
type recordingStore struct {
	outbox.Store
	mu        sync.Mutex
	ids       []uuid.UUID
	failAfter int
}

func (r *recordingStore) AcceptBatch(ctx context.Context, items []outbox.AcceptItem) []outbox.AcceptOutcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]outbox.AcceptOutcome, len(items))
	for i, it := range items {
		if r.failAfter > 0 && len(r.ids) >= r.failAfter {
			out[i].Err = errors.New("database is down")
			continue
		}
		r.ids = append(r.ids, it.Submission.ID)
		out[i].Result, out[i].Err = outbox.AcceptOne(ctx, r.Store, it.Submission, it.Deliveries)
	}
	return out
}

func TestReplayKeepsIdOrderAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{SegmentSize: 4 << 10})
	es := appendN(t, s, 40)
	if n := len(segmentFiles(t, dir)); n < 3 {
		t.Fatalf("%d segments; want rotation by size", n)
	}
	rs := &recordingStore{Store: storetest.OpenSQLite(t)}
	if _, err := s.Replay(context.Background(), rs, nil); err != nil {
		t.Fatal(err)
	}
	if len(rs.ids) != len(es) {
		t.Fatalf("replayed %d, want %d", len(rs.ids), len(es))
	}
	for i := range es {
		if rs.ids[i] != es[i].Submission.ID {
			t.Fatalf("replay %d is %s, want %s (append order)", i, rs.ids[i], es[i].Submission.ID)
		}
		if i > 0 && rs.ids[i].String() <= rs.ids[i-1].String() {
			t.Fatalf("UUIDv7 ids out of order at %d", i)
		}
	}
}

func TestStoreFailureLeavesTheSegmentForLater(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	appendN(t, s, 6)
	rs := &recordingStore{Store: storetest.OpenSQLite(t), failAfter: 3}
	rep, err := s.Replay(context.Background(), rs, nil)
	if err == nil {
		t.Fatal("replay into a failing store succeeded")
	}
	if rep.Stored != 3 || rep.Segments != 0 || rep.Remaining != 6 {
		t.Fatalf("report %+v", rep)
	}
	if n := len(segmentFiles(t, dir)); n != 1 {
		t.Fatalf("%d segments, want the undrained one kept", n)
	}
	rs.failAfter = 0
	rep, err = s.Replay(context.Background(), rs, nil)
	if err != nil || rep.Stored != 3 || rep.Duplicates != 3 || rep.Remaining != 0 {
		t.Fatalf("second pass: %+v, %v", rep, err)
	}
	if n := receivedEvents(t, rs.Store); n != 6 {
		t.Fatalf("%d written, want 6", n)
	}
}

func TestAppendSyncsFileAndNewSegmentDirectory(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{SegmentSize: 1})
	var mu sync.Mutex
	var fileSyncs, dirSyncs int
	s.syncFile = func(f *os.File) error { mu.Lock(); fileSyncs++; mu.Unlock(); return f.Sync() }
	s.syncDir = func(d string) error { mu.Lock(); dirSyncs++; mu.Unlock(); return syncDir(d) }
	appendN(t, s, 3)
	// SegmentSize 1: every append after the first rotates, so each creates a segment.
	if fileSyncs != 3 || dirSyncs != 3 {
		t.Fatalf("file syncs %d, dir syncs %d; want 3 and 3", fileSyncs, dirSyncs)
	}
}

func TestFailedSyncFailsAppendAndIsNotCounted(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	appendN(t, s, 1)
	s.syncFile = func(*os.File) error { return errors.New("EIO") }
	if err := s.Append(newEntry("lost")); err == nil {
		t.Fatal("append succeeded although fsync failed")
	}
	if got := s.Stats().Entries; got != 1 {
		t.Fatalf("entries = %d; a failed append must not count", got)
	}
	if st := s.Stats(); !strings.Contains(st.AppendError, "EIO") || st.AppendErrorAt.IsZero() {
		t.Fatalf("stats after a failed append: %+v, want its error and time (health reports it)", st)
	}
	s.syncFile = (*os.File).Sync
	later := newEntry("later")
	if err := s.Append(later); err != nil {
		t.Fatalf("append after a failed one: %v", err)
	}
	if st := s.Stats(); st.AppendError != "" {
		t.Fatalf("stats after a successful append: error %q still reported", st.AppendError)
	}
	if n := len(segmentFiles(t, dir)); n != 2 {
		t.Fatalf("%d segments; the failed append must seal its segment", n)
	}
	s.syncDir = func(string) error { return errors.New("EROFS") }
	s.Close()
	if err := s.Append(newEntry("nodir")); err == nil {
		t.Fatal("append succeeded although the new segment's directory sync failed")
	}
}

// TestFailedAppendLeavesNoTornRecord: the bytes of an append that failed (here its fsync;
// on a full disk, a short write) are cut off the segment. Left there, the replayer finds
// them torn and must copy them to corrupt/ before it can go on, which on a full disk
// never succeeds: the spool then stayed full for good (TestDrillLimits/DiskFullSpool).
func TestFailedAppendLeavesNoTornRecord(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	appendN(t, s, 2)
	s.syncFile = func(*os.File) error { return errors.New("ENOSPC") }
	if err := s.Append(newEntry("unanswered")); err == nil {
		t.Fatal("append succeeded although fsync failed")
	}
	s.syncFile = (*os.File).Sync
	segs := segmentFiles(t, dir)
	if len(segs) != 1 {
		t.Fatalf("segments %v, want the one sealed segment", segs)
	}
	b, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	recs, bad := parseSegment(b)
	if len(recs) != 2 || len(bad) != 0 {
		t.Fatalf("segment holds %d records and %d bad ranges; want the 2 answered records and nothing torn", len(recs), len(bad))
	}
}

func TestStatsDepthAndOldestAge(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	s := openSpool(t, dir, Options{Now: func() time.Time { return now }})
	if st := s.Stats(); st.Entries != 0 || s.OldestAge() != 0 {
		t.Fatalf("empty spool: %+v", st)
	}
	for i, ago := range []time.Duration{time.Minute, 3 * time.Minute, 2 * time.Minute} {
		e := newEntry(uuid.NewString())
		e.Submission.CreatedAt = now.Add(-ago)
		if err := s.Append(e); err != nil {
			t.Fatal(i, err)
		}
	}
	if st := s.Stats(); st.Entries != 3 || s.OldestAge() != 3*time.Minute {
		t.Fatalf("stats %+v, age %v", st, s.OldestAge())
	}
	s.Close()
	// Another process (after a restart) sees the same depth.
	s2 := openSpool(t, dir, Options{Now: func() time.Time { return now }})
	if st := s2.Stats(); st.Entries != 3 || s2.OldestAge() != 3*time.Minute {
		t.Fatalf("after reopen: %+v", st)
	}
}

func TestReplayerDrainsOnWake(t *testing.T) {
	s := openSpool(t, t.TempDir(), Options{})
	store := storetest.OpenSQLite(t)
	passes := make(chan Report, 10)
	r := &Replayer{Spool: s, Store: store, Interval: time.Hour,
		OnReplay: func(rep Report, err error) {
			if err == nil {
				passes <- rep
			}
		}}
	// What an earlier process left is replayed at start.
	es := appendN(t, s, 4)
	r.Start()
	defer r.Stop()
	next := func(want int) {
		t.Helper()
		select {
		case rep := <-passes:
			if rep.Stored != want || rep.Remaining != 0 {
				t.Fatalf("report %+v, want %d stored", rep, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no replay pass")
		}
	}
	next(4)
	// The interval is an hour: only Wake can start this pass.
	es = append(es, appendN(t, s, 2)...)
	r.Wake()
	next(2)
	for _, e := range es {
		if _, err := store.GetSubmission(context.Background(), e.Submission.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// A spooled post whose key was meanwhile bound to other content (the visitor's other
// post reached the store first) is stored quarantined/idempotency_key_reused, exactly as
// the handler would have stored it, and its deliveries are skipped; one that repeats
// the bound content is a duplicate. Replaying the segment again stores nothing twice.
func TestReplayJudgesAReusedKeyAsTheHandlerDoes(t *testing.T) {
	store := storetest.OpenSQLite(t)
	bound := storetest.NewSubmission("contact", storetest.WithIdempotencyKey("K"))
	storetest.MustAccept(t, store, bound)

	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	reused, retry := newEntry("K"), newEntry("K")
	reused.Submission.ContentHash = "sha256:other content"
	for _, e := range []Entry{reused, retry} {
		if err := s.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	seg := segmentFiles(t, dir)[0]
	saved, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	for pass, want := range []Report{{Stored: 1, Duplicates: 1, Segments: 1}, {Duplicates: 2, Segments: 1}} {
		if err := os.WriteFile(seg, saved, 0o600); err != nil {
			t.Fatal(err)
		}
		s := openSpool(t, dir, Options{})
		rep, err := s.Replay(context.Background(), store, nil)
		s.Close()
		if err != nil || rep != want {
			t.Fatalf("pass %d: %+v, %v, want %+v", pass+1, rep, err, want)
		}
	}
	got, err := store.GetSubmission(context.Background(), reused.Submission.ID)
	if err != nil || got.Status != outbox.SubmissionQuarantined || got.Reason != outbox.ReasonIdempotencyKeyReused {
		t.Fatalf("replayed reused-key post: %+v, %v, want quarantined/%s", got, err, outbox.ReasonIdempotencyKeyReused)
	}
	ds, err := store.ListDeliveries(context.Background(), reused.Submission.ID)
	if err != nil || len(ds) != 2 || ds[0].Status != outbox.DeliverySkipped || ds[1].Status != outbox.DeliverySkipped {
		t.Errorf("its deliveries: %+v, %v, want both skipped", ds, err)
	}
	if _, err := store.GetSubmission(context.Background(), retry.Submission.ID); err == nil {
		t.Errorf("the spooled retry of the bound post was stored too")
	}
}

// A spool whose append failed (disk full) reports it until the replayer's next pass finds
// the disk writable again, even when no submission is appended in between.
func TestReplayerClearsAppendErrorOnceWritable(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	full := true
	var mu sync.Mutex
	s.syncFile = func(f *os.File) error {
		mu.Lock()
		defer mu.Unlock()
		if full {
			return syscall.ENOSPC
		}
		return f.Sync()
	}
	if err := s.Append(newEntry("lost")); err == nil {
		t.Fatal("append succeeded on a full disk")
	}
	store := storetest.OpenSQLite(t)
	r := &Replayer{Spool: s, Store: store, Interval: 10 * time.Millisecond}
	r.Start()
	defer r.Stop()
	// Still full: the failure stays reported across passes.
	for range 3 {
		r.Wake()
	}
	if st := s.Stats(); !strings.Contains(st.AppendError, "no space left") {
		t.Fatalf("append error while the disk is still full = %q, want it reported", st.AppendError)
	}
	mu.Lock()
	full = false
	mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s.Stats().AppendError != "" {
		if time.Now().After(deadline) {
			t.Fatalf("append error still reported after the disk had room again: %q", s.Stats().AppendError)
		}
		<-tick.C
	}
	if _, err := os.Stat(filepath.Join(dir, probeName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the recheck's scratch file is left behind: %v", err)
	}
}
