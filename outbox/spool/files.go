package spool

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Files of spooled submissions (docs/design.md, "Spool"): a record stays small (maxRecord
// bounds it) because a file's content is not in it but in files/<file id> beside the
// segments, written and fsynced, with its directory entry, before the record that names
// it. Replay reads the content from there and checks it against the record's size and
// SHA-256; the file is deleted once its segment is drained. Files no record names (an
// Append that failed after writing them, a crash before they were deleted) are removed
// when the spool opens.
const filesDir = "files"

func (s *Spool) filePath(id uuid.UUID) string {
	return filepath.Join(s.dir, filesDir, id.String())
}

// writeFiles writes the content of e's files, each fsynced, then the files directory. On
// an error it removes what it wrote.
func (s *Spool) writeFiles(e Entry) (written []uuid.UUID, err error) {
	defer func() {
		if err != nil {
			s.removeFiles(written)
			written = nil
		}
	}()
	for i := range e.Submission.Files {
		f := &e.Submission.Files[i]
		if !f.HasContent {
			continue
		}
		if err := s.writeFile(f); err != nil {
			return written, err
		}
		written = append(written, f.ID)
	}
	if len(written) > 0 {
		if err := s.syncDir(filepath.Join(s.dir, filesDir)); err != nil {
			return written, fmt.Errorf("spool: sync files directory: %w", err)
		}
	}
	return written, nil
}

func (s *Spool) writeFile(f *outbox.File) error {
	if f.Content == nil {
		return fmt.Errorf("spool: file %s has no content", f.ID)
	}
	if err := os.MkdirAll(filepath.Join(s.dir, filesDir), 0o700); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	rc, err := f.Content.Open()
	if err != nil {
		return fmt.Errorf("spool: file %s: %w", f.ID, err)
	}
	defer rc.Close()
	final := s.filePath(f.ID)
	tmp := final + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("spool: file %s: %w", f.ID, err)
	}
	n, err := io.Copy(out, rc)
	if err == nil && n != f.Size {
		err = fmt.Errorf("wrote %d bytes, want %d", n, f.Size)
	}
	if err == nil {
		err = s.syncFile(out)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("spool: file %s: %w", f.ID, err)
	}
	return nil
}

func (s *Spool) removeFiles(ids []uuid.UUID) {
	for _, id := range ids {
		os.Remove(s.filePath(id))
	}
}

// spooledContent is a spooled file's content, as replay hands it to the store.
type spooledContent string

func (p spooledContent) Open() (io.ReadCloser, error) { return os.Open(string(p)) }

// attachFiles points the files of a replayed submission at their spooled content. A file
// whose content is missing or does not match its size and SHA-256 (the disk lost or
// damaged it) is stored as metadata only, with a file.spool_damaged event naming it, so
// that one bad file neither blocks the spool nor goes unnoticed.
func (s *Spool) attachFiles(sub *outbox.Submission) (damaged []uuid.UUID) {
	for i := range sub.Files {
		f := &sub.Files[i]
		if !f.HasContent {
			continue
		}
		path := s.filePath(f.ID)
		if err := checkFile(path, f.Size, f.SHA256); err != nil {
			f.HasContent = false
			damaged = append(damaged, f.ID)
			continue
		}
		f.Content = spooledContent(path)
	}
	if len(damaged) > 0 {
		var ids []string
		for _, id := range damaged {
			ids = append(ids, `"`+id.String()+`"`)
		}
		sub.Events = append(sub.Events, outbox.Event{Kind: EventFileSpoolDamaged,
			Data: []byte(`{"files":[` + strings.Join(ids, ",") + `]}`), At: sub.CreatedAt})
	}
	return damaged
}

// EventFileSpoolDamaged records files whose spooled content was lost or damaged before
// replay: the submission was stored with their metadata only.
const EventFileSpoolDamaged = "file.spool_damaged"

func checkFile(path string, size int64, sum string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if n != size || hex.EncodeToString(h.Sum(nil)) != sum {
		return errors.New("content does not match")
	}
	return nil
}

// sweepFiles removes the spooled files no record names.
func (s *Spool) sweepFiles(named map[uuid.UUID]bool) {
	entries, err := os.ReadDir(filepath.Join(s.dir, filesDir))
	if err != nil {
		return
	}
	for _, e := range entries {
		id, err := uuid.Parse(e.Name())
		if err != nil || !named[id] {
			os.Remove(filepath.Join(s.dir, filesDir, e.Name()))
		}
	}
}
