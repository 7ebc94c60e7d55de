package outbox

import (
	"context"
	"fmt"
	"time"
)

// BatchCompleter is the part of Store that records attempts' outcomes: many completions
// in one transaction, or one (CompleteOne).
//
// Each completion writes its attempt row and the delivery's new state, clearing the
// lease, only while the delivery still carries the completion's lease token. The
// attempt's number is c.Attempt.Attempt (the delivery's attempts when zero), raised past
// any number already in the history, so that attempts after a manual retry (which
// resets the budget) never collide with earlier ones. A zero Event.SubmissionID,
// DeliveryID or At is filled from the delivery and c.Now.
//
// CompleteBatch returns one error per completion, in order. The fencing is checked per
// row: a completion whose lease was lost gets ErrLeaseLost and writes nothing while the
// others are recorded. If the transaction itself fails, every completion gets an error and none was
// recorded.
type BatchCompleter interface {
	CompleteBatch(ctx context.Context, cs []Completion) []error
}

// CompleteOne records one completion through s as a batch of one.
func CompleteOne(ctx context.Context, s BatchCompleter, c Completion) error {
	errs := s.CompleteBatch(ctx, []Completion{c})
	if len(errs) != 1 {
		return fmt.Errorf("complete delivery %s: store answered %d errors for 1 completion", c.DeliveryID, len(errs))
	}
	return errs[0]
}

// Completion batching: sends finish independently, and under load dozens finish within
// a millisecond of each other; sharing their outcome writes saves a commit each. One
// flush at a time: while it runs, the next batch fills (up to max), so under load each
// commit carries the outcomes of a whole flush's duration. Two concurrent flushers split
// the same outcomes into twice the commits and contended with the claim for the
// database; in the burn-down one flusher and batches up to 256 took the completion
// commits from ~2,000 to ~860 per 100,000 deliveries. A lone completion still flushes at
// once.
var completionLimits = batchLimits{max: 256, linger: time.Millisecond, flushers: 1}

// recordCompletion writes c through the store, batched with concurrent completions.
func (w *Worker) recordCompletion(ctx context.Context, c Completion) error {
	err, werr := w.completions.do(ctx, c, completionLimits, func(cs []Completion) []error {
		fctx, cancel := w.storeCtx()
		defer cancel()
		// A store answering another number of errors fails every caller (batcher.go).
		return w.cfg.Store.CompleteBatch(fctx, cs)
	})
	if werr != nil {
		return fmt.Errorf("complete delivery %s: %w", c.DeliveryID, werr)
	}
	return err
}
