package spool

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// entryWithFile is newEntry with a file larger than a stored chunk and a metadata-only
// one.
func entryWithFile(t *testing.T) (Entry, []byte) {
	t.Helper()
	e := newEntry(uuid.NewString())
	content := bytes.Repeat([]byte("%PDF-1.7 spooled "), outbox.FileChunkSize/8)
	meta := storetest.NewFile(&e.Submission, "other", "x.bin", []byte("not kept"))
	meta.HasContent, meta.Content = false, nil
	e.Submission.Files = []outbox.File{storetest.NewFile(&e.Submission, "cv", "cv.pdf", content), meta}
	return e, content
}

func spooledFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, filesDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A spooled submission carries its files: their content is on disk beside the segment
// before Append returns (the record itself stays small), replay stores it byte for byte,
// a second replay of the same segment stores nothing twice, and the spooled files go
// with their drained segment.
func TestSpoolCarriesFilesAndReplaysThemOnce(t *testing.T) {
	for name, st := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			e, content := entryWithFile(t)
			s := openSpool(t, dir, Options{})
			if err := s.Append(e); err != nil {
				t.Fatalf("append: %v", err)
			}
			if got := spooledFiles(t, dir); len(got) != 1 || got[0] != e.Submission.Files[0].ID.String() {
				t.Fatalf("spooled files %v, want the cv's content only", got)
			}
			if fi, _ := os.Stat(segmentFiles(t, dir)[0]); fi.Size() > 4096 {
				t.Errorf("segment is %d bytes: the content went into the record", fi.Size())
			}
			s.Close()
			seg := segmentFiles(t, dir)[0]
			saved, _ := os.ReadFile(seg)
			savedFile, _ := os.ReadFile(filepath.Join(dir, filesDir, e.Submission.Files[0].ID.String()))

			store := st(t)
			for pass := 1; pass <= 2; pass++ {
				if pass == 2 { // as after a crash between the last Accept and the deletions
					os.WriteFile(seg, saved, 0o600)
					os.WriteFile(filepath.Join(dir, filesDir, e.Submission.Files[0].ID.String()), savedFile, 0o600)
				}
				s := openSpool(t, dir, Options{})
				rep, err := s.Replay(context.Background(), store, nil)
				if err != nil {
					t.Fatalf("pass %d: %v", pass, err)
				}
				if want := (Report{Stored: 2 - pass, Duplicates: pass - 1, Segments: 1}); rep != want {
					t.Fatalf("pass %d: report %+v, want %+v", pass, rep, want)
				}
				if left := spooledFiles(t, dir); len(left) != 0 {
					t.Errorf("pass %d: spooled files left after the drain: %v", pass, left)
				}
				s.Close()
			}
			files, err := store.SubmissionFiles(context.Background(), e.Submission.ID)
			if err != nil || len(files) != 2 || !files[0].HasContent || files[1].HasContent {
				t.Fatalf("stored files %+v, %v", files, err)
			}
			var buf bytes.Buffer
			if _, err := store.CopyFile(context.Background(), files[0].ID, &buf); err != nil || !bytes.Equal(buf.Bytes(), content) {
				t.Fatalf("stored content %d bytes, %v; want the %d spooled", buf.Len(), err, len(content))
			}
		})
	}
}

// A spooled file whose content the disk lost does not block the spool: the submission
// is stored with that file's metadata only and a file.spool_damaged event names it.
func TestSpooledFileLostIsStoredAsMetadataWithAnEvent(t *testing.T) {
	dir := t.TempDir()
	e, _ := entryWithFile(t)
	s := openSpool(t, dir, Options{})
	if err := s.Append(e); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, filesDir, e.Submission.Files[0].ID.String()), []byte("%PDF-1.7 short"), 0o600)
	store := storetest.OpenSQLite(t)
	if _, err := s.Replay(context.Background(), store, nil); err != nil {
		t.Fatalf("replay: %v", err)
	}
	files, _ := store.SubmissionFiles(context.Background(), e.Submission.ID)
	if len(files) != 2 || files[0].HasContent {
		t.Fatalf("stored files %+v, want the cv as metadata only", files)
	}
	evs, _ := store.ListEvents(context.Background(), EventFileSpoolDamaged, 0)
	if len(evs) != 1 || evs[0].SubmissionID != e.Submission.ID || !bytes.Contains(evs[0].Data, []byte(files[0].ID.String())) {
		t.Fatalf("events %+v, want one file.spool_damaged naming the cv", evs)
	}
}

// A file no record names (its Append failed after writing it, or a crash came before
// its deletion) is removed when the spool opens; one a record names is kept.
func TestOpenSweepsSpooledFilesNoRecordNames(t *testing.T) {
	dir := t.TempDir()
	e, _ := entryWithFile(t)
	s := openSpool(t, dir, Options{})
	if err := s.Append(e); err != nil {
		t.Fatal(err)
	}
	s.Close()
	orphan := filepath.Join(dir, filesDir, uuid.NewString())
	os.WriteFile(orphan, []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, filesDir, e.Submission.Files[0].ID.String()+".tmp"), []byte("x"), 0o600)
	openSpool(t, dir, Options{})
	if got := spooledFiles(t, dir); len(got) != 1 || got[0] != e.Submission.Files[0].ID.String() {
		t.Fatalf("after open: %v, want only the named file", got)
	}
}

// When the record cannot be written, the files written for it are removed, and the
// Append fails.
func TestFailedAppendRemovesItsFiles(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	failing := errors.New("disk full")
	s.syncFile = func(f *os.File) error {
		if filepath.Base(filepath.Dir(f.Name())) == filesDir {
			return nil // the file's own sync succeeds, the segment's fails
		}
		return failing
	}
	e, _ := entryWithFile(t)
	if err := s.Append(e); !errors.Is(err, failing) {
		t.Fatalf("append: %v, want the sync error", err)
	}
	if got := spooledFiles(t, dir); len(got) != 0 {
		t.Fatalf("files left by a failed append: %v", got)
	}
}
