package sqlitestore

import (
	"context"
	"errors"
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// AcceptBatch accepts every item in one write transaction (group commit): one fsync for
// the lot, shared with the other writes waiting beside it (combine.go); a batch with
// files has a transaction of its own. Each item runs inside its own SAVEPOINT, so an
// item that fails is rolled back alone and gets its own error; duplicates, including of
// an earlier item of the batch, are found exactly as Accept finds them. See
// outbox.BatchAccepter.
func (s *Store) AcceptBatch(ctx context.Context, items []outbox.AcceptItem) []outbox.AcceptOutcome {
	out := make([]outbox.AcceptOutcome, len(items))
	prepared := make([]preparedAccept, len(items))
	for i, it := range items {
		prepared[i], out[i].Err = prepareAccept(it.Submission)
	}
	write := s.writeTx
	if hasFiles(items) {
		write = s.writeTxAlone // its chunks would hold everyone's commit
	}
	err := write(ctx, func(tx *txStmts) error {
		for i, it := range items {
			if out[i].Err != nil {
				continue
			}
			err := inSavepoint(ctx, tx, itemSavepoint, func() error {
				var err error
				out[i].Result, err = acceptIn(ctx, tx, it.Submission, it.Deliveries, prepared[i])
				return err
			})
			var sp errSavepoint
			if err != nil && (ctx.Err() != nil || errors.As(err, &sp)) {
				return err
			}
			if err != nil {
				out[i].Err = fmt.Errorf("accept submission %s: %w", it.Submission.ID, err)
			}
		}
		return outbox.BeforeCommit(ctx)
	})
	if err != nil {
		for i, it := range items {
			if out[i].Err == nil {
				out[i] = outbox.AcceptOutcome{Err: fmt.Errorf("accept submission %s: %w: %w", it.Submission.ID, outbox.ErrBatchMemberFailed, err)}
			}
		}
	}
	return out
}

func hasFiles(items []outbox.AcceptItem) bool {
	for _, it := range items {
		if len(it.Submission.Files) > 0 {
			return true
		}
	}
	return false
}

// errSavepoint marks a failure of the savepoint machinery itself, after which the
// transaction cannot be trusted and fails as a whole.
type errSavepoint struct{ err error }

func (e errSavepoint) Error() string { return "savepoint: " + e.err.Error() }
func (e errSavepoint) Unwrap() error { return e.err }

// savepoint is the three statements of one named savepoint (queries/system.sql).
type savepoint struct{ begin, rollback, release string }

var (
	// itemSavepoint holds one member of a batch (AcceptBatch, CompleteBatch).
	itemSavepoint = savepoint{qSavepoint, qRollbackToSavepoint, qReleaseSavepoint}
	// writeSavepoint holds one function of the shared write transaction (combine.go);
	// item savepoints nest inside it.
	writeSavepoint = savepoint{qWriteSavepoint, qWriteRollbackTo, qWriteRelease}
)

// inSavepoint runs fn inside the savepoint sp, rolled back to if fn fails. An error fn
// returns comes back as is (the transaction is still usable); a failing savepoint
// statement comes back as errSavepoint.
func inSavepoint(ctx context.Context, tx txQuerier, sp savepoint, fn func() error) error {
	if _, err := tx.ExecContext(ctx, sp.begin); err != nil {
		return errSavepoint{err}
	}
	ferr := fn()
	if ferr != nil {
		if _, err := tx.ExecContext(ctx, sp.rollback); err != nil {
			return errSavepoint{err}
		}
	}
	if _, err := tx.ExecContext(ctx, sp.release); err != nil {
		return errSavepoint{err}
	}
	return ferr
}
