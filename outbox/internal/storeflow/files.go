package storeflow

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// FileTx is what InsertFiles runs inside an accept transaction.
type FileTx interface {
	// InsertFile stores f's metadata as sub's file number position, created at created.
	InsertFile(ctx context.Context, sub *outbox.Submission, position int, f *outbox.File, created time.Time) error
	// InsertFileChunk stores one chunk of a file's content; chunk is reused once it
	// returns.
	InsertFileChunk(ctx context.Context, fileID uuid.UUID, seq int, chunk []byte) error
}

// InsertFiles writes sub's files and their content in the caller's accept transaction
// (docs/design.md, "Files"). A file created at no time is created with sub.
func InsertFiles(ctx context.Context, tx FileTx, sub *outbox.Submission) error {
	for i := range sub.Files {
		f := &sub.Files[i]
		if f.ID == uuid.Nil {
			return fmt.Errorf("insert file %d: missing file id", i)
		}
		if err := tx.InsertFile(ctx, sub, i, f, orTime(f.CreatedAt, sub.CreatedAt)); err != nil {
			return fmt.Errorf("insert file %d: %w", i, err)
		}
		if err := outbox.ChunkFile(f, func(seq int, chunk []byte) error {
			return tx.InsertFileChunk(ctx, f.ID, seq, chunk)
		}); err != nil {
			return fmt.Errorf("insert file %d: %w", i, err)
		}
	}
	return nil
}

// FileReader is how a store reads stored files, outside any write transaction.
type FileReader interface {
	// FileByID is one file's metadata, outbox.ErrNotFound when there is none.
	FileByID(ctx context.Context, id uuid.UUID) (outbox.File, error)
	// FileChunk is chunk seq of a file's content; ok false when there is none.
	FileChunk(ctx context.Context, id uuid.UUID, seq int) (chunk []byte, ok bool, err error)
}

// GetFile returns one file's metadata, or outbox.ErrNotFound.
func GetFile(ctx context.Context, r FileReader, id uuid.UUID) (*outbox.File, error) {
	f, err := r.FileByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get file %s: %w", id, err)
	}
	return &f, nil
}

// CopyFile writes a file's content to w, one chunk (one query) at a time, after
// checking the file exists.
func CopyFile(ctx context.Context, r FileReader, id uuid.UUID, w io.Writer) (int64, error) {
	if _, err := GetFile(ctx, r, id); err != nil {
		return 0, err
	}
	n, err := outbox.CopyChunks(w, func(seq int) ([]byte, bool, error) {
		return r.FileChunk(ctx, id, seq)
	})
	if err != nil {
		return n, fmt.Errorf("read file %s: %w", id, err)
	}
	return n, nil
}
