package outbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
)

// ReasonFileRejected marks a quarantined submission with a file that broke its field's
// rules (type, size, count, empty, not a file field); File.Rejected says which and why.
const ReasonFileRejected = "file_rejected"

// EventFileRejected records the files of a submission that broke a rule: their ids,
// fields and rules, never the visitor's file names.
const EventFileRejected = "file.rejected"

// The rules a file can break (File.Rejected).
const (
	FileTooLarge       = "too_large"        // over its field's max_size
	FileTooMany        = "too_many"         // past its field's max_files
	FileEmpty          = "empty"            // 0 bytes
	FileTypeNotAllowed = "type_not_allowed" // the sniffed type is not allowed
	FileNotAFileField  = "not_a_file_field" // sent for a field not declared `file`
)

// FileChunkSize is how many bytes of a file one stored chunk holds: Accept reads a file
// one chunk at a time, and a download streams it the same way, so no more than this is in
// memory per file (docs/design.md, "Files").
const FileChunkSize = 256 << 10

// FileWriteRate is the rate at which a store write is expected to take file content at
// the least: a submission's write deadline (the Acceptor's, the spool replay's) grows by
// FileAllowance, so that a large upload is not sent to the spool for the time its bytes
// take to write.
const FileWriteRate = 4 << 20 // bytes per second

// FileAllowance is the extra time a store write of sub gets for its files' content.
func FileAllowance(sub *Submission) time.Duration {
	var n int64
	for _, f := range sub.Files {
		if f.HasContent {
			n += f.Size
		}
	}
	return time.Duration(n * int64(time.Second) / FileWriteRate)
}

// File is one uploaded file of a submission, stored in the same transaction as the
// submission (docs/design.md, "Files").
type File struct {
	ID           uuid.UUID
	SubmissionID uuid.UUID // set by the store
	// Field is the form field it was posted as; Name the visitor's file name, sanitised.
	Field string
	Name  string
	// DeclaredType is the Content-Type the client declared (recorded, never trusted);
	// SniffedType what the content looks like, which the allowlist is checked against.
	DeclaredType string
	SniffedType  string
	Size         int64
	SHA256       string // hex of the content's SHA-256
	// Rejected is the rule the file broke (FileTooLarge, ...); empty when it passed.
	Rejected string
	// HasContent is false when only the metadata is kept (a spam submission's files).
	HasContent bool
	CreatedAt  time.Time
	// Content opens the bytes to store; Accept reads it when HasContent is set. Nil on
	// files read back from a store.
	Content FileContent
}

// FileMeta is a file as exports and the admin API show it: its metadata, never its
// content.
type FileMeta struct {
	ID           string `json:"id"`
	Field        string `json:"field"`
	Name         string `json:"name"`
	Size         int64  `json:"size"`
	Type         string `json:"type"` // sniffed
	DeclaredType string `json:"declared_type,omitempty"`
	SHA256       string `json:"sha256"`
	Rejected     string `json:"rejected,omitempty"`
	Kept         bool   `json:"kept"` // the content is stored
}

// Meta returns f's FileMeta.
func (f File) Meta() FileMeta {
	return FileMeta{ID: f.ID.String(), Field: f.Field, Name: f.Name, Size: f.Size, Type: f.SniffedType,
		DeclaredType: f.DeclaredType, SHA256: f.SHA256, Rejected: f.Rejected, Kept: f.HasContent}
}

// FileContent is a file's bytes, which can be read more than once (a store may retry a
// transaction, the spool copies them).
type FileContent interface {
	Open() (io.ReadCloser, error)
}

// BytesContent is content held in memory.
type BytesContent []byte

// Open returns a reader over the bytes.
func (b BytesContent) Open() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(b)), nil
}

// FileStore is the part of Store that reads stored files back: the inbox lists and
// downloads them, and the signed download handler serves them.
type FileStore interface {
	// SubmissionFiles returns a submission's files (metadata only) in the order they were
	// posted; none for an unknown submission.
	SubmissionFiles(ctx context.Context, submissionID uuid.UUID) ([]File, error)
	// GetFile returns one file's metadata, or ErrNotFound.
	GetFile(ctx context.Context, id uuid.UUID) (*File, error)
	// CopyFile writes the stored content of a file to w, one chunk at a time, and returns
	// the number of bytes written; ErrNotFound for an unknown file.
	CopyFile(ctx context.Context, id uuid.UUID, w io.Writer) (int64, error)
}

// ChunkFile calls write with the successive chunks of f's content (at most
// FileChunkSize bytes each, numbered from 0; the slice is reused after write returns). The bytes read must match f.Size and
// f.SHA256, so a file cut short (a temporary file that went away, a spool copy damaged
// on disk) fails the transaction rather than being stored half. storeflow.InsertFiles
// calls it inside each store's accept transaction.
func ChunkFile(f *File, write func(seq int, chunk []byte) error) error {
	if !f.HasContent {
		return nil
	}
	if f.Content == nil {
		return fmt.Errorf("file %s: no content to store", f.ID)
	}
	rc, err := f.Content.Open()
	if err != nil {
		return fmt.Errorf("file %s: %w", f.ID, err)
	}
	defer rc.Close()
	h := sha256.New()
	buf := make([]byte, FileChunkSize)
	var total int64
	for seq := 0; ; seq++ {
		n, err := io.ReadFull(rc, buf)
		if n > 0 {
			total += int64(n)
			h.Write(buf[:n])
			if werr := write(seq, buf[:n]); werr != nil {
				return fmt.Errorf("file %s chunk %d: %w", f.ID, seq, werr)
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return fmt.Errorf("file %s: read: %w", f.ID, err)
		}
	}
	if total != f.Size {
		return fmt.Errorf("file %s: read %d bytes, want %d", f.ID, total, f.Size)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != f.SHA256 {
		return fmt.Errorf("file %s: content does not match its SHA-256", f.ID)
	}
	return nil
}

// CopyChunks writes a stored file's chunks 0, 1, ... to w, reading each with chunk,
// until chunk reports there is none (ok false). storeflow.CopyFile uses it.
func CopyChunks(w io.Writer, chunk func(seq int) (data []byte, ok bool, err error)) (int64, error) {
	var total int64
	for seq := 0; ; seq++ {
		data, ok, err := chunk(seq)
		if err != nil {
			return total, fmt.Errorf("read chunk %d: %w", seq, err)
		}
		if !ok {
			return total, nil
		}
		n, err := w.Write(data)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
}
