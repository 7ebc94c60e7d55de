package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// DefaultSegmentSize is the size past which Append starts a new segment. Small segments
// let the replayer delete drained data early; large ones mean fewer files and fsyncs of
// the directory.
const DefaultSegmentSize = 4 << 20

const (
	segPrefix  = "seg-"
	segSuffix  = ".spool"
	corruptDir = "corrupt"
)

// ErrInUse is wrapped by Open's error when another process holds the directory.
var ErrInUse = errors.New("one process owns a spool directory at a time")

// Options tune a spool. Zero values mean the defaults.
type Options struct {
	// SegmentSize is the size at which a segment is sealed and a new one started.
	SegmentSize int64
	// Now is the clock used for the age of spooled entries (tests inject one).
	Now func() time.Time
}

// Spool is an append-only, fsynced queue of submissions in one directory. One process
// owns a directory at a time (Open takes a lock on it where the platform has flock and
// fails while another process holds it); inside it Spool is safe for concurrent use.
type Spool struct {
	dir  string
	opts Options

	// syncFile and syncDir are the durability points; tests replace them to prove they
	// run and that their failure fails Append.
	syncFile func(*os.File) error
	syncDir  func(string) error

	lock *os.File // holds the directory's lock (lock_unix.go) until Close; nil elsewhere

	mu      sync.Mutex
	active  *os.File // nil until the first Append after Open or a seal
	actSeq  uint64
	actSize int64
	nextSeq uint64
	segs    map[uint64]*segInfo // every segment on disk, active included
	// appendErr is the failure of the last Append that could not write (nil after a
	// successful one): while set, the spool cannot take submissions.
	appendErr   error
	appendErrAt time.Time
	appendErrN  int // size of the record that failed: what Recheck must be able to write

	keys map[keyRef]*heldKey // idempotency keys the entries bind (keys.go)
	// holds counts the shippers (Hold, Unhold): while above 0 a replayed segment stays
	// until a shipper confirms it (hold.go).
	holds int
}

// segInfo is what health needs about one segment without reading it again.
type segInfo struct {
	entries int
	oldest  time.Time // creation time of its oldest entry; zero when empty
	bytes   int64     // size on disk (hold.go bounds what is kept for a shipper)
	// replayed: every record is in the store; shipped: a shipper confirmed its copy
	// (hold.go). Without a hold a segment is deleted once replayed.
	replayed, shipped bool
}

// Stats is the spool's depth for health checks and metrics.
type Stats struct {
	Entries  int       // valid records waiting for replay
	Segments int       // segment files on disk
	Oldest   time.Time // creation time of the oldest waiting entry; zero when empty
	// AppendError is why the last Append failed to write (disk full, read-only, ...),
	// at AppendErrorAt; empty once an Append succeeds again.
	AppendError   string
	AppendErrorAt time.Time
	// Unshipped, UnshippedBytes and OldestUnshipped describe what a shipper has not yet
	// confirmed off the host (hold.go); they count every segment when nothing ships.
	Unshipped       int
	UnshippedBytes  int64
	OldestUnshipped time.Time
}

// Open opens (creating if needed) the spool in dir and counts what earlier processes left
// there. It never appends to an existing segment: a segment from a crashed process may end
// in a torn record, and appending after it would hide good records behind bad bytes.
func Open(dir string, opts Options) (*Spool, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open spool %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open spool: %w", err)
	}
	s := &Spool{
		dir: dir, opts: opts, lock: lock,
		syncFile: (*os.File).Sync, syncDir: syncDir,
		segs: map[uint64]*segInfo{}, keys: map[keyRef]*heldKey{},
	}
	seqs, err := s.listSegments()
	if err != nil {
		s.unlock()
		return nil, err
	}
	named := map[uuid.UUID]bool{} // the files the records name (files.go)
	for _, seq := range seqs {
		b, err := os.ReadFile(s.segPath(seq))
		if err != nil {
			s.unlock()
			return nil, fmt.Errorf("open spool: read %s: %w", s.segPath(seq), err)
		}
		recs, _ := parseSegment(b)
		info := &segInfo{bytes: int64(len(b))}
		for _, r := range recs {
			info.add(r.Entry.Submission.CreatedAt)
			s.holdLocked(&r.Entry, seq, nil)
			for _, f := range r.Entry.Submission.Files {
				named[f.ID] = true
			}
		}
		s.segs[seq] = info
		s.nextSeq = seq + 1
	}
	if s.nextSeq == 0 {
		s.nextSeq = 1
	}
	s.sweepFiles(named)
	return s, nil
}

// Dir is the spool's directory.
func (s *Spool) Dir() string { return s.dir }

func (i *segInfo) add(created time.Time) {
	i.entries++
	if !created.IsZero() && (i.oldest.IsZero() || created.Before(i.oldest)) {
		i.oldest = created
	}
}

// Append writes e to the active segment and returns only after the bytes and, for a new
// segment, its directory entry are on stable storage. An error means e is NOT safe: the
// caller must not claim success.
//
// The content of e's files is written first, beside the segments (files.go). Append does
// not judge e's idempotency key (Accept does); e's key is held only if no entry holds it.
func (s *Spool) Append(e Entry) error { return s.append(e, nil) }

// append is Append for an entry whose key Accept reserved (reserved nil: none).
func (s *Spool) append(e Entry, reserved *heldKey) (err error) {
	defer func() {
		if err != nil {
			s.mu.Lock()
			s.releaseLocked(&e, reserved)
			s.mu.Unlock()
		}
	}()
	payload, err := encodeEntry(e)
	if err != nil {
		return err
	}
	rec := frame(payload)
	written, err := s.writeFiles(e)
	if err != nil {
		return fmt.Errorf("spool append %s: %w", e.Submission.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writeLocked(rec); err != nil {
		s.removeFiles(written)
		s.appendErr, s.appendErrAt, s.appendErrN = err, s.opts.Now(), len(rec)
		return fmt.Errorf("spool append %s: %w", e.Submission.ID, err)
	}
	s.appendErr = nil
	s.segs[s.actSeq].add(e.Submission.CreatedAt)
	s.holdLocked(&e, s.actSeq, reserved)
	s.segs[s.actSeq].bytes = s.actSize
	return nil
}

// probeName is the scratch file Recheck writes; it is not a segment (listSegments).
const probeName = "append-probe.tmp"

// Recheck tries, after a failed Append, whether the spool could write the failed record
// now, and forgets the failure if so. Without it a spool that filled its disk while the
// store was down would be reported unable to take submissions (health 503, spool.go in
// the root package) until the next outage's first Append, although replay freed the space
// long ago. It writes and fsyncs a scratch file of that record's size, then removes it;
// it does nothing while no Append has failed. It reports whether the spool is writable.
func (s *Spool) Recheck() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.appendErr == nil {
		return true
	}
	path := filepath.Join(s.dir, probeName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return false
	}
	_, err = f.Write(make([]byte, max(s.appendErrN, 1)))
	if err == nil {
		err = s.syncFile(f)
	}
	f.Close()
	os.Remove(path)
	if err != nil {
		return false
	}
	s.appendErr = nil
	return true
}

// writeLocked appends one framed record to the active segment (sealing a full one and
// starting a new one as needed) and syncs it.
func (s *Spool) writeLocked(rec []byte) error {
	if s.active != nil && s.actSize > 0 && s.actSize+int64(len(rec)) > s.opts.SegmentSize {
		if err := s.sealLocked(); err != nil {
			return err
		}
	}
	if s.active == nil {
		if err := s.createLocked(); err != nil {
			return err
		}
	}
	before := s.actSize
	n, err := s.active.Write(rec)
	s.actSize += int64(n)
	if err == nil {
		err = s.syncFile(s.active)
	}
	if err != nil {
		// The record was not acknowledged (Append fails), so its bytes are cut off: left
		// as a torn tail, the replayer would have to copy them to corrupt/ before going
		// on, and on the full disk that caused the short write that copy never succeeds,
		// so nothing would ever be replayed or deleted. Truncating needs no free space.
		// If it fails, the segment ends in a partial record the reader skips. Either way
		// it is sealed, so the next Append starts a clean segment.
		if terr := s.active.Truncate(before); terr == nil {
			s.actSize = before
		}
		_ = s.sealLocked()
	}
	return err
}

// createLocked starts a new segment and makes its name durable.
func (s *Spool) createLocked() error {
	seq := s.nextSeq
	f, err := os.OpenFile(s.segPath(seq), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("spool: create segment: %w", err)
	}
	if err := s.syncDir(s.dir); err != nil {
		f.Close()
		os.Remove(s.segPath(seq))
		return fmt.Errorf("spool: sync directory %s: %w", s.dir, err)
	}
	s.nextSeq++
	s.active, s.actSeq, s.actSize = f, seq, 0
	s.segs[seq] = &segInfo{}
	return nil
}

// sealLocked closes the active segment: from now on it is only read and deleted.
func (s *Spool) sealLocked() error {
	if s.active == nil {
		return nil
	}
	err := s.active.Close()
	s.active = nil
	if err != nil {
		return fmt.Errorf("spool: close segment %d: %w", s.actSeq, err)
	}
	return nil
}

// sealed seals the active segment if it holds anything and returns every sealed segment,
// oldest first. Replay reads only sealed segments, so it never races an Append.
func (s *Spool) sealed() ([]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active != nil && s.actSize > 0 {
		if err := s.sealLocked(); err != nil {
			return nil, err
		}
	}
	var out []uint64
	for seq := range s.segs {
		if s.active != nil && seq == s.actSeq {
			continue
		}
		out = append(out, seq)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// Stats reports the spool's depth.
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Segments: len(s.segs)}
	if s.appendErr != nil {
		st.AppendError, st.AppendErrorAt = s.appendErr.Error(), s.appendErrAt
	}
	for _, i := range s.segs {
		if !i.shipped {
			st.Unshipped += i.entries
			st.UnshippedBytes += i.bytes
			if !i.oldest.IsZero() && (st.OldestUnshipped.IsZero() || i.oldest.Before(st.OldestUnshipped)) {
				st.OldestUnshipped = i.oldest
			}
		}
		if i.replayed {
			continue // kept for a shipper only: not waiting for the store
		}
		st.Entries += i.entries
		if !i.oldest.IsZero() && (st.Oldest.IsZero() || i.oldest.Before(st.Oldest)) {
			st.Oldest = i.oldest
		}
	}
	return st
}

// OldestAge is how long the oldest waiting entry has waited; 0 when the spool is empty.
func (s *Spool) OldestAge() time.Duration {
	st := s.Stats()
	if st.Oldest.IsZero() {
		return 0
	}
	return s.opts.Now().Sub(st.Oldest)
}

// Close closes the active segment and releases the directory. Spooled entries stay on
// disk for the next Open.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.sealLocked()
	s.unlock()
	return err
}

// unlock releases the directory's lock (closing the file drops the flock).
func (s *Spool) unlock() {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// remove deletes a drained segment and forgets it.
func (s *Spool) remove(seq uint64) error {
	if err := os.Remove(s.segPath(seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("spool: remove segment %d: %w", seq, err)
	}
	// Best effort: a crash before this sync can only resurrect a drained segment, whose
	// replay is a no-op.
	_ = s.syncDir(s.dir)
	s.mu.Lock()
	delete(s.segs, seq)
	s.forgetLocked(seq)
	s.mu.Unlock()
	return nil
}

// keepAside copies the bytes of a bad range into corrupt/ for a human to inspect.
func (s *Spool) keepAside(seq uint64, b []byte, r badRange) (string, error) {
	cd := filepath.Join(s.dir, corruptDir)
	if err := os.MkdirAll(cd, 0o700); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	name := filepath.Join(cd, fmt.Sprintf("%s%020d-at-%d.bad", segPrefix, seq, r.Off))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("spool: keep corrupt bytes: %w", err)
	}
	_, err = f.Write(b[r.Off:r.End])
	if err == nil {
		err = s.syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.syncDir(cd)
	}
	if err != nil {
		return "", fmt.Errorf("spool: keep corrupt bytes in %s: %w", name, err)
	}
	return name, nil
}

func (s *Spool) segPath(seq uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%s%020d%s", segPrefix, seq, segSuffix))
}

func (s *Spool) listSegments() ([]uint64, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("open spool: %w", err)
	}
	var seqs []uint64
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, segPrefix) || !strings.HasSuffix(name, segSuffix) {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, segPrefix), segSuffix), 10, 64)
		if err != nil {
			continue
		}
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs, nil
}

// syncDir makes a directory's entries (a created or removed file) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
