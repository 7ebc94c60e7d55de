package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var (
	qInsertFile      = queries.Must("InsertFile")
	qInsertFileChunk = queries.Must("InsertFileChunk")
	qSubmissionFiles = queries.Must("SubmissionFiles")
	qGetFile         = queries.Must("GetFile")
	qFileChunk       = queries.Must("FileChunk")
)

// insertFiles writes sub's files and their content inside the accept transaction
// (docs/design.md, "Files").
func insertFiles(ctx context.Context, tx txQuerier, sub *outbox.Submission) error {
	for i := range sub.Files {
		f := &sub.Files[i]
		if f.ID == uuid.Nil {
			return fmt.Errorf("insert file %d: missing file id", i)
		}
		if _, err := tx.ExecContext(ctx, qInsertFile, f.ID.String(), sub.ID.String(), i, f.Field, f.Name,
			f.DeclaredType, f.SniffedType, f.Size, f.SHA256, f.Rejected, f.HasContent,
			micros(orTime(f.CreatedAt, sub.CreatedAt))); err != nil {
			return fmt.Errorf("insert file %d: %w", i, err)
		}
		id := f.ID.String()
		if err := outbox.ChunkFile(f, func(seq int, chunk []byte) error {
			_, err := tx.ExecContext(ctx, qInsertFileChunk, id, seq, chunk)
			return err
		}); err != nil {
			return fmt.Errorf("insert file %d: %w", i, err)
		}
	}
	return nil
}

func scanFile(row interface{ Scan(...any) error }) (outbox.File, error) {
	var (
		f          outbox.File
		id, sub    string
		created    int64
		hasContent bool
	)
	if err := row.Scan(&id, &sub, &f.Field, &f.Name, &f.DeclaredType, &f.SniffedType, &f.Size, &f.SHA256,
		&f.Rejected, &hasContent, &created); err != nil {
		return f, err
	}
	var err error
	if f.ID, err = uuid.Parse(id); err != nil {
		return f, err
	}
	if f.SubmissionID, err = uuid.Parse(sub); err != nil {
		return f, err
	}
	f.HasContent = hasContent
	f.CreatedAt = fromMicros(created)
	return f, nil
}

// SubmissionFiles returns a submission's files in the order they were posted.
func (s *Store) SubmissionFiles(ctx context.Context, submissionID uuid.UUID) ([]outbox.File, error) {
	rows, err := s.r.QueryContext(ctx, qSubmissionFiles, submissionID.String())
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", submissionID, err)
	}
	defer rows.Close()
	var out []outbox.File
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, fmt.Errorf("list files of %s: %w", submissionID, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list files of %s: %w", submissionID, err)
	}
	return out, nil
}

// GetFile returns one file's metadata, or outbox.ErrNotFound.
func (s *Store) GetFile(ctx context.Context, id uuid.UUID) (*outbox.File, error) {
	f, err := scanFile(s.r.QueryRowContext(ctx, qGetFile, id.String()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get file %s: %w", id, outbox.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get file %s: %w", id, err)
	}
	return &f, nil
}

// CopyFile writes a file's content to w, one chunk (one query) at a time.
func (s *Store) CopyFile(ctx context.Context, id uuid.UUID, w io.Writer) (int64, error) {
	if _, err := s.GetFile(ctx, id); err != nil {
		return 0, err
	}
	n, err := outbox.CopyChunks(w, func(seq int) ([]byte, bool, error) {
		var chunk []byte
		err := s.r.QueryRowContext(ctx, qFileChunk, id.String(), seq).Scan(&chunk)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, nil
		}
		return chunk, err == nil, err
	})
	if err != nil {
		return n, fmt.Errorf("read file %s: %w", id, err)
	}
	return n, nil
}
