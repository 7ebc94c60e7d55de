package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// AcceptItem is one submission with its deliveries.
type AcceptItem struct {
	Submission *Submission
	Deliveries []Delivery
}

// AcceptOutcome is what AcceptBatch answers for one AcceptItem.
type AcceptOutcome struct {
	Result AcceptResult
	Err    error
}

// BatchAccepter is the part of Store that writes submissions: many of them in one
// transaction (group commit), or one (AcceptOne).
//
// AcceptBatch writes each item's submission, its deliveries, a submission.received
// event and sub.Events. If the submission's id is already stored, or its
// IdempotencyKey is set and (form, key) is bound by a stored submission
// (BindsIdempotencyKey), including by an earlier item of the same batch, the item writes
// nothing and its outcome is that submission's id and status with Duplicate set (see
// DuplicateResult). A submission that does not bind its key (quarantined) never collides
// on it: it is stored, its key kept for audit only. Deliveries are stored as given,
// except that a missing id, status, next attempt time or creation time is filled in
// (PlannedDelivery); the caller's values are not modified.
//
// AcceptBatch returns one outcome per item, in order. An item that cannot be written (a
// constraint, bad data) gets its own error without failing the others. Items with a nil Err were all
// committed when AcceptBatch returns; if the transaction itself fails (the commit, the
// connection, ctx), every item gets an error and none was written.
type BatchAccepter interface {
	AcceptBatch(ctx context.Context, items []AcceptItem) []AcceptOutcome
}

// AcceptOne writes one submission through s as a batch of one. A key bound to other
// content comes back as a duplicate with KeyReused; Accept is what stores such a post.
func AcceptOne(ctx context.Context, s BatchAccepter, sub *Submission, deliveries []Delivery) (AcceptResult, error) {
	out := s.AcceptBatch(ctx, []AcceptItem{{Submission: sub, Deliveries: deliveries}})
	if len(out) != 1 {
		return AcceptResult{}, fmt.Errorf("accept submission %s: store answered %d outcomes for 1 item", sub.ID, len(out))
	}
	return out[0].Result, out[0].Err
}

// Group commit defaults: one PostgreSQL or SQLite commit costs a disk flush, so sharing it
// between up to 64 submissions multiplies intake past the per-commit limit; the linger is
// short enough to stay invisible next to an HTTP round trip. Up to 4 shared transactions
// run at once, so that a commit waiting for its flush does not hold the next batch back
// (PostgreSQL merges concurrent commits' flushes); a store with a single writer is better
// served by Flushers 1.
const (
	DefaultGroupCommitMax      = 64
	DefaultGroupCommitLinger   = time.Millisecond
	DefaultGroupCommitFlushers = 4
	DefaultGroupCommitTimeout  = 10 * time.Second
)

// GroupCommitter puts concurrent Accepts into shared transactions (group commit). Every
// caller is answered only after the transaction holding its submission committed, with
// its own result: its id, or the original's id for a duplicate, or its own error. The
// zero value is ready to use, with the defaults above.
type GroupCommitter struct {
	// MaxBatch, Linger, Flushers and Timeout override the defaults when positive. Timeout
	// bounds one shared transaction, independently of any one caller's context.
	MaxBatch int
	Linger   time.Duration
	Flushers int
	Timeout  time.Duration

	b batcher[AcceptItem, AcceptOutcome]
}

// Accept stores sub and deliveries through s, sharing a transaction with concurrent
// calls. If ctx ends before the shared commit answered, Accept returns
// ctx's error at once, even when its shared transaction is stuck, while the write may
// still commit: the submission's id makes a later retry (or spool replay) of it a
// duplicate, never a second copy. A submission whose ctx ended before its shared
// transaction began is left out of it.
//
// A key bound to other content is handled as outbox.Accept handles it.
//
// A submission with files is written by AcceptOne in a transaction of its own: its chunks
// would hold a shared transaction, and every submission waiting in it, for as long as
// they take to write (docs/design.md, "Files").
func (g *GroupCommitter) Accept(ctx context.Context, s Store, sub *Submission, deliveries []Delivery) (AcceptResult, error) {
	if len(sub.Files) > 0 {
		return acceptKeyed(ctx, func(ctx context.Context, sub *Submission, deliveries []Delivery) (AcceptResult, error) {
			return AcceptOne(ctx, s, sub, deliveries)
		}, sub, deliveries)
	}
	return acceptKeyed(ctx, func(ctx context.Context, sub *Submission, deliveries []Delivery) (AcceptResult, error) {
		return g.accept(ctx, s, sub, deliveries)
	}, sub, deliveries)
}

func (g *GroupCommitter) accept(ctx context.Context, s Store, sub *Submission, deliveries []Delivery) (AcceptResult, error) {
	out, err := g.b.do(ctx, AcceptItem{Submission: sub, Deliveries: deliveries}, g.limits(), func(items []AcceptItem) []AcceptOutcome {
		fctx, cancel := context.WithTimeout(context.Background(), orDuration(g.Timeout, DefaultGroupCommitTimeout))
		defer cancel()
		// A store answering another number of outcomes fails every caller (batcher.go).
		return s.AcceptBatch(fctx, items)
	})
	if err != nil {
		return AcceptResult{}, fmt.Errorf("group commit: %w", err)
	}
	return out.Result, out.Err
}

func (g *GroupCommitter) limits() batchLimits {
	return batchLimits{
		max:      orInt(g.MaxBatch, DefaultGroupCommitMax),
		linger:   orDuration(g.Linger, DefaultGroupCommitLinger),
		flushers: orInt(g.Flushers, DefaultGroupCommitFlushers),
	}
}

type beforeCommitKey struct{}

// WithBeforeCommit returns a context under which a store's AcceptBatch and CompleteBatch
// call fn after writing the batch, just before it is committed; an error from fn rolls
// the batch back and is every member's error. (On SQLite a batch may share its
// transaction with other writes, outbox/sqlitestore/combine.go: the hook then runs at the
// end of the batch's own savepoint, and only the batch is rolled back.) It is a fault-injection point for tests and benchmarks (a commit
// that fails after all rows were written); production code never sets it.
func WithBeforeCommit(ctx context.Context, fn func() error) context.Context {
	return context.WithValue(ctx, beforeCommitKey{}, fn)
}

// BeforeCommit runs the hook set by WithBeforeCommit, if any. Stores call it.
func BeforeCommit(ctx context.Context) error {
	fn, _ := ctx.Value(beforeCommitKey{}).(func() error)
	if fn == nil {
		return nil
	}
	if err := fn(); err != nil {
		return fmt.Errorf("before commit: %w", err)
	}
	return nil
}

// HasBeforeCommit reports whether ctx carries a WithBeforeCommit hook, so a store can
// skip an explicit transaction around a single statement when there is nothing to run
// before its commit.
func HasBeforeCommit(ctx context.Context) bool {
	fn, _ := ctx.Value(beforeCommitKey{}).(func() error)
	return fn != nil
}

// ErrBatchMemberFailed is wrapped into the error of every member of a shared transaction
// that failed as a whole, so a caller can tell it from a problem with its own row.
var ErrBatchMemberFailed = errors.New("outbox: shared transaction failed")

func orInt(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func orDuration(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}
