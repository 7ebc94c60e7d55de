package pgstore

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
	return storeflow.InsertFiles(ctx, flowTx{tx}, sub)
}

func (t flowTx) InsertFile(ctx context.Context, sub *outbox.Submission, position int, f *outbox.File, created time.Time) error {
	_, err := t.tx.Exec(ctx, qInsertFile, f.ID, sub.ID, position, f.Field, f.Name, f.DeclaredType, f.SniffedType,
		f.Size, f.SHA256, f.Rejected, f.HasContent, created)
	return err
}

func (t flowTx) InsertFileChunk(ctx context.Context, fileID uuid.UUID, seq int, chunk []byte) error {
	_, err := t.tx.Exec(ctx, qInsertFileChunk, fileID, seq, chunk)
	return err
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
	return storeflow.GetFile(ctx, flow{s}, id)
}

// CopyFile writes a file's content to w, one chunk (one query) at a time.
func (s *Store) CopyFile(ctx context.Context, id uuid.UUID, w io.Writer) (int64, error) {
	return storeflow.CopyFile(ctx, flow{s}, id, w)
}

func (f flow) FileByID(ctx context.Context, id uuid.UUID) (outbox.File, error) {
	file, err := scanFile(f.s.pool.QueryRow(ctx, qGetFile, id))
	if isNoRows(err) {
		return file, outbox.ErrNotFound
	}
	return file, err
}

func (f flow) FileChunk(ctx context.Context, id uuid.UUID, seq int) ([]byte, bool, error) {
	var chunk []byte
	err := f.s.pool.QueryRow(ctx, qFileChunk, id, seq).Scan(&chunk)
	if isNoRows(err) {
		return nil, false, nil
	}
	return chunk, err == nil, err
}
