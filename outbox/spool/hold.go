package spool

import (
	"fmt"
	"os"
	"sort"

	"github.com/google/uuid"
)

// A hold keeps the journal for a shipper that copies it off the host (outbox/backup,
// docs/design.md "Off-host backups"). Without one a segment is deleted as soon as replay
// stored every record in it. With one it is deleted only when it is both replayed and
// shipped, whichever comes last; a replayed segment no longer counts as waiting for the
// store (Stats.Entries) but still counts as unshipped.

// Hold makes the spool keep replayed segments until MarkShipped. Call it before the
// shipper starts. Holds are counted: across a config reload the new App's shipper holds
// the shared spool before the old one lets go.
func (s *Spool) Hold() {
	s.mu.Lock()
	s.holds++
	s.mu.Unlock()
}

// Unhold undoes one Hold. When the last goes (a config without backup), the segments
// kept only for a shipper are deleted: the store has them.
func (s *Spool) Unhold() error {
	s.mu.Lock()
	if s.holds > 0 {
		s.holds--
	}
	var gone []uint64
	if s.holds == 0 {
		for seq, i := range s.segs {
			if i.replayed {
				gone = append(gone, seq)
			}
		}
	}
	s.mu.Unlock()
	for _, seq := range gone {
		if err := s.removeWithFiles(seq); err != nil {
			return err
		}
	}
	return nil
}

// Segment is one sealed segment a shipper has not confirmed yet.
type Segment struct {
	Seq   uint64
	Bytes int64
}

// Unshipped seals the active segment if it holds anything and returns the sealed
// segments not yet shipped, oldest first.
func (s *Spool) Unshipped() ([]Segment, error) {
	seqs, err := s.sealed()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Segment
	for _, seq := range seqs {
		if i := s.segs[seq]; i != nil && !i.shipped {
			out = append(out, Segment{Seq: seq, Bytes: i.bytes})
		}
	}
	return out, nil
}

// ReadSegment returns the valid records of a sealed segment in append order, with the
// path of each file's spooled content (FilePath). Damaged bytes are skipped here: replay
// keeps them aside and reports them.
func (s *Spool) ReadSegment(seq uint64) ([]Entry, error) {
	b, err := os.ReadFile(s.segPath(seq))
	if err != nil {
		return nil, fmt.Errorf("spool: read segment %d: %w", seq, err)
	}
	recs, _ := parseSegment(b)
	out := make([]Entry, len(recs))
	for i, r := range recs {
		out[i] = r.Entry
	}
	return out, nil
}

// FilePath is where the content of a spooled file is kept until its segment goes.
func (s *Spool) FilePath(id uuid.UUID) string { return s.filePath(id) }

// MarkShipped records that segment seq is confirmed off the host, and deletes it if it
// is also replayed. Dropping a segment to bound the disk (the shipper's max_local) is
// the same call: the store has it, the bucket never will.
func (s *Spool) MarkShipped(seq uint64) error {
	s.mu.Lock()
	i := s.segs[seq]
	if i == nil {
		s.mu.Unlock()
		return nil
	}
	i.shipped = true
	gone := i.replayed
	s.mu.Unlock()
	if !gone {
		return nil
	}
	return s.removeWithFiles(seq)
}

func (s *Spool) isReplayed(seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.segs[seq]
	return i != nil && i.replayed
}

// replayedSegment is called when every record of seq is stored: the segment and its files
// go now, or, under a hold, when shipped too.
func (s *Spool) replayedSegment(seq uint64, files []uuid.UUID) error {
	s.mu.Lock()
	i := s.segs[seq]
	keep := s.holds > 0 && i != nil && !i.shipped
	if i != nil {
		i.replayed = true
	}
	s.mu.Unlock()
	if keep {
		return nil
	}
	if err := s.remove(seq); err != nil {
		return err
	}
	s.removeFiles(files)
	return nil
}

// removeWithFiles deletes a segment and the files its records name.
func (s *Spool) removeWithFiles(seq uint64) error {
	entries, err := s.ReadSegment(seq)
	if err != nil {
		return err
	}
	var files []uuid.UUID
	for _, e := range entries {
		for _, f := range e.Submission.Files {
			files = append(files, f.ID)
		}
	}
	if err := s.remove(seq); err != nil {
		return err
	}
	s.removeFiles(files)
	return nil
}

// ReleaseReplayed gives up, oldest first, unshipped segments that are already replayed
// until at least bytes are freed: the shipper's size bound. Segments not yet in the
// store are never released. It returns how many segments and records went.
func (s *Spool) ReleaseReplayed(bytes int64) (segments, records int) {
	s.mu.Lock()
	var seqs []uint64
	for seq, i := range s.segs {
		if i.replayed && !i.shipped {
			seqs = append(seqs, seq)
		}
	}
	s.mu.Unlock()
	sort.Slice(seqs, func(a, b int) bool { return seqs[a] < seqs[b] })
	var freed int64
	for _, seq := range seqs {
		if freed >= bytes {
			break
		}
		s.mu.Lock()
		i := s.segs[seq]
		n, sz := i.entries, i.bytes
		s.mu.Unlock()
		if err := s.MarkShipped(seq); err != nil {
			break
		}
		freed += sz
		segments++
		records += n
	}
	return segments, records
}
