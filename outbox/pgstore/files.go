package pgstore

import (
	"context"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var (
	qInsertFile      = queries.Must("InsertFile")
	qInsertFileChunk = queries.Must("InsertFileChunk")
	qSubmissionFiles = queries.Must("SubmissionFiles")
	qGetFile         = queries.Must("GetFile")
	qFileChunk       = queries.Must("FileChunk")
)

func hasFiles(it outbox.AcceptItem) bool { return len(it.Submission.Files) > 0 }

// acceptBatchWithFiles is AcceptBatch for a batch holding a submission with files: each
// of those is written in a transaction of its own (acceptWithFiles), with its chunks
// streamed one statement at a time, rather than in the set statement; the other items
// are written as usual. Items keep their order, so a later duplicate of an earlier item
// is found as in any batch.
func (s *Store) acceptBatchWithFiles(ctx context.Context, items []outbox.AcceptItem) []outbox.AcceptOutcome {
	out := make([]outbox.AcceptOutcome, len(items))
	for i, it := range items {
		if hasFiles(it) {
			out[i] = s.acceptWithFiles(ctx, it)
		} else {
			out[i] = s.AcceptBatch(ctx, items[i:i+1])[0]
		}
	}
	return out
}

// acceptWithFiles writes one submission with AcceptSet, then, when it was not a
// duplicate, its files, all in one transaction (docs/design.md, "Files").
func (s *Store) acceptWithFiles(ctx context.Context, it outbox.AcceptItem) outbox.AcceptOutcome {
	sub := it.Submission
	row, err := newAcceptRow(it)
	if err != nil {
		return outbox.AcceptOutcome{Err: err}
	}
	var res outbox.AcceptResult
	err = s.tx(ctx, func(tx pgx.Tx) error {
		var id [16]byte
		err := tx.QueryRow(ctx, acceptSetSQL, newAcceptColumns([]acceptRow{row}, []int{0}).params()...).Scan(&id)
		if isNoRows(err) {
			dup := []outbox.AcceptOutcome{{}}
			if err := s.lookUpDuplicates(ctx, tx, []acceptRow{row}, []int{0}, dup); err != nil {
				return err
			}
			res = dup[0].Result
			return outbox.BeforeCommit(ctx)
		}
		if err != nil {
			return err
		}
		if err := insertFiles(ctx, tx, sub); err != nil {
			return err
		}
		res = outbox.AcceptResult{ID: sub.ID, Status: sub.Status}
		return outbox.BeforeCommit(ctx)
	})
	if err != nil {
		return outbox.AcceptOutcome{Err: fmt.Errorf("accept submission %s: %w", sub.ID, err)}
	}
	return outbox.AcceptOutcome{Result: res}
}

func insertFiles(ctx context.Context, tx pgx.Tx, sub *outbox.Submission) error {
	for i := range sub.Files {
		f := &sub.Files[i]
		if f.ID == uuid.Nil {
			return fmt.Errorf("insert file %d: missing file id", i)
		}
		created := f.CreatedAt
		if created.IsZero() {
			created = sub.CreatedAt
		}
		if _, err := tx.Exec(ctx, qInsertFile, f.ID, sub.ID, i, f.Field, f.Name, f.DeclaredType, f.SniffedType,
			f.Size, f.SHA256, f.Rejected, f.HasContent, created); err != nil {
			return fmt.Errorf("insert file %d: %w", i, err)
		}
		if err := outbox.ChunkFile(f, func(seq int, chunk []byte) error {
			_, err := tx.Exec(ctx, qInsertFileChunk, f.ID, seq, chunk)
			return err
		}); err != nil {
			return fmt.Errorf("insert file %d: %w", i, err)
		}
	}
	return nil
}

func scanFile(row pgx.Row) (outbox.File, error) {
	var f outbox.File
	err := row.Scan(&f.ID, &f.SubmissionID, &f.Field, &f.Name, &f.DeclaredType, &f.SniffedType, &f.Size,
		&f.SHA256, &f.Rejected, &f.HasContent, &f.CreatedAt)
	f.CreatedAt = f.CreatedAt.UTC()
	return f, err
}

// SubmissionFiles returns a submission's files in the order they were posted.
func (s *Store) SubmissionFiles(ctx context.Context, submissionID uuid.UUID) ([]outbox.File, error) {
	rows, err := s.pool.Query(ctx, qSubmissionFiles, submissionID)
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", submissionID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.File, error) { return scanFile(r) })
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", submissionID, err)
	}
	return out, nil
}

// GetFile returns one file's metadata, or outbox.ErrNotFound.
func (s *Store) GetFile(ctx context.Context, id uuid.UUID) (*outbox.File, error) {
	f, err := scanFile(s.pool.QueryRow(ctx, qGetFile, id))
	if isNoRows(err) {
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
		err := s.pool.QueryRow(ctx, qFileChunk, id, seq).Scan(&chunk)
		if isNoRows(err) {
			return nil, false, nil
		}
		return chunk, err == nil, err
	})
	if err != nil {
		return n, fmt.Errorf("read file %s: %w", id, err)
	}
	return n, nil
}
