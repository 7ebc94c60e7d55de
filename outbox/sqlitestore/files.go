package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

var (
	qInsertFile      = queries.Must("InsertFile")
	qInsertFileChunk = queries.Must("InsertFileChunk")
	qSubmissionFiles = queries.Must("SubmissionFiles")
	qGetFile         = queries.Must("GetFile")
	qFileChunk       = queries.Must("FileChunk")
)

// insertFiles writes sub's files and their content inside the accept transaction
// (storeflow.InsertFiles).
func insertFiles(ctx context.Context, tx txQuerier, sub *outbox.Submission) error {
	return storeflow.InsertFiles(ctx, flowTx{tx}, sub)
}

func (t flowTx) InsertFile(ctx context.Context, sub *outbox.Submission, position int, f *outbox.File, created time.Time) error {
	_, err := t.tx.ExecContext(ctx, qInsertFile, f.ID.String(), sub.ID.String(), position, f.Field, f.Name,
		f.DeclaredType, f.SniffedType, f.Size, f.SHA256, f.Rejected, f.HasContent, micros(created))
	return err
}

func (t flowTx) InsertFileChunk(ctx context.Context, fileID uuid.UUID, seq int, chunk []byte) error {
	_, err := t.tx.ExecContext(ctx, qInsertFileChunk, fileID.String(), seq, chunk)
	return err
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
	return storeflow.GetFile(ctx, flow{s}, id)
}

// CopyFile writes a file's content to w, one chunk (one query) at a time.
func (s *Store) CopyFile(ctx context.Context, id uuid.UUID, w io.Writer) (int64, error) {
	return storeflow.CopyFile(ctx, flow{s}, id, w)
}

func (f flow) FileByID(ctx context.Context, id uuid.UUID) (outbox.File, error) {
	file, err := scanFile(f.s.r.QueryRowContext(ctx, qGetFile, id.String()))
	if errors.Is(err, sql.ErrNoRows) {
		return file, outbox.ErrNotFound
	}
	return file, err
}

func (f flow) FileChunk(ctx context.Context, id uuid.UUID, seq int) ([]byte, bool, error) {
	var chunk []byte
	err := f.s.r.QueryRowContext(ctx, qFileChunk, id.String(), seq).Scan(&chunk)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	return chunk, err == nil, err
}
