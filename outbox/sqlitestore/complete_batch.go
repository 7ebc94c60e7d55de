package sqlitestore

import (
	"context"
	"errors"
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/completion"
)

// CompleteBatch records many completions in one write transaction. Each runs inside its
// own SAVEPOINT with the lease fencing, so a stale lease (outbox.ErrLeaseLost) or a bad
// row is rolled back alone. See outbox.BatchCompleter.
func (s *Store) CompleteBatch(ctx context.Context, cs []outbox.Completion) []error {
	errs := make([]error, len(cs))
	planned := make([]outbox.Completion, len(cs))
	for i, c := range cs {
		planned[i], errs[i] = completion.Plan(c)
	}
	err := s.writeTx(ctx, func(tx *txStmts) error {
		for i, c := range planned {
			if errs[i] != nil {
				continue
			}
			err := inSavepoint(ctx, tx, itemSavepoint, func() error { return completeIn(ctx, tx, c) })
			var sp errSavepoint
			if err != nil && (ctx.Err() != nil || errors.As(err, &sp)) {
				return err
			}
			if err != nil {
				errs[i] = fmt.Errorf("complete delivery %s: %w", c.DeliveryID, err)
			}
		}
		return outbox.BeforeCommit(ctx)
	})
	if err != nil {
		for i, c := range cs {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("complete delivery %s: %w: %w", c.DeliveryID, outbox.ErrBatchMemberFailed, err)
			}
		}
	}
	return errs
}
