package outbox

import (
	"context"
	"fmt"
	"time"
)

// BatchCompleter is implemented by stores that can record many completions in one
// transaction.
//
// CompleteBatch returns one error per completion, in order, each what Store.Complete
// would have returned: in particular the fencing is checked per row, so a completion
// whose lease was lost gets ErrLeaseLost and writes nothing while the others are
// recorded. If the transaction itself fails, every completion gets an error and none was
// recorded.
type BatchCompleter interface {
	CompleteBatch(ctx context.Context, cs []Completion) []error
}

// Completion batching: sends finish independently, and under load dozens finish within
// a millisecond of each other; sharing their outcome writes saves a commit each.
var completionLimits = batchLimits{max: 64, linger: time.Millisecond, flushers: 2}

// recordCompletion writes c through the store, batched with concurrent completions when
// the store is a BatchCompleter.
func (w *Worker) recordCompletion(ctx context.Context, c Completion) error {
	bc, ok := w.cfg.Store.(BatchCompleter)
	if !ok {
		return w.cfg.Store.Complete(ctx, c)
	}
	err, werr := w.completions.do(ctx, c, completionLimits, func(cs []Completion) []error {
		fctx, cancel := w.storeCtx()
		defer cancel()
		errs := bc.CompleteBatch(fctx, cs)
		if n := len(errs); n != len(cs) {
			errs = make([]error, len(cs))
			for i := range errs {
				errs[i] = fmt.Errorf("complete batch: store answered %d errors for %d completions", n, len(cs))
			}
		}
		return errs
	})
	if werr != nil {
		return fmt.Errorf("complete delivery %s: %w", c.DeliveryID, werr)
	}
	return err
}
