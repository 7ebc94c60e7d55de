package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The write combiner: every write of the store (accepts, claims, completions, renewals,
// releases, inbox actions, feedback, digests, prune batches, migrations) is a function
// handed to writeTx, and one goroutine runs them all on the writer connection. It runs
// every function waiting at that moment in ONE IMMEDIATE transaction, each inside its own
// SAVEPOINT, so a worker's claim and its batch of completions share intake's commit (one
// fsync with synchronous=FULL) instead of each paying one of its own behind it on the
// single writer.
//
//   - A function that fails is rolled back to its savepoint alone and gets its own error;
//     the others commit.
//   - Nothing is reported before the COMMIT returned; a failed COMMIT (or a failure of the
//     savepoint statements, after which SQLite may have rolled the transaction back) is
//     the error of every function that ran in the transaction.
//   - A caller whose ctx ends while its function still waits leaves with ctx's error, and
//     its function never runs. Once its function has started, the caller waits for the
//     commit and hears the truth: the statements run under a context no caller can cancel
//     (txStmts), because an interrupted statement makes SQLite roll back the whole
//     transaction, the other callers' work with it.
//   - A transaction starts no new function once it holds combineMaxFns or has run for
//     combineMaxTime; the rest lead the next one. A write that is long by nature (a prune
//     batch, a submission's file chunks) runs in a transaction of its own (writeTxAlone),
//     so it holds no one else's commit.
//
// The writer pool keeps its one connection; the combiner takes it for each transaction
// and gives it back at COMMIT, so what must run outside a transaction (scrubWAL's
// checkpoint, erase.go; Ping) takes it in between.
const (
	combineMaxFns  = 128
	combineMaxTime = 20 * time.Millisecond
)

// errClosed answers a write handed to a closed store.
var errClosed = errors.New("sqlite store is closed")

// A writeReq is one function waiting for, or running in, a combined transaction.
type writeReq struct {
	ctx   context.Context
	fn    func(tx *txStmts) error
	alone bool

	state    atomic.Int32 // reqWaiting, then reqTaken (by the combiner) or reqLeft (by the caller)
	err      error        // written by the combiner before done closes
	panicked any          // what fn panicked with, re-raised in the caller
	done     chan struct{}
}

const (
	reqWaiting int32 = iota
	reqTaken
	reqLeft
)

// take claims r for the combiner; false means its caller has left.
func (r *writeReq) take() bool { return r.state.CompareAndSwap(reqWaiting, reqTaken) }

func (r *writeReq) finish(err error) {
	r.err = err
	close(r.done)
}

// writeHooks are test hooks (export_test.go).
type writeHooks struct {
	queued func()            // after a function joined the queue
	commit func(n int) error // before the COMMIT of a transaction holding n functions; an error fails it
}

type combiner struct {
	w       *sql.DB
	hooks   atomic.Pointer[writeHooks]
	maxFns  int           // combineMaxFns; tests lower it
	maxTime time.Duration // combineMaxTime

	mu     sync.Mutex
	queue  []*writeReq
	closed bool
	wake   chan struct{} // capacity 1: the queue has something, or closed is set
	exited chan struct{}
}

// newCombiner starts the combiner of w; maxFns 0 means combineMaxFns.
func newCombiner(w *sql.DB, maxFns int) *combiner {
	if maxFns <= 0 {
		maxFns = combineMaxFns
	}
	c := &combiner{w: w, maxFns: maxFns, maxTime: combineMaxTime,
		wake: make(chan struct{}, 1), exited: make(chan struct{})}
	go c.loop()
	return c
}

// stop lets the combiner run what is queued, then ends it; later writes get errClosed.
func (c *combiner) stop() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.signal()
	<-c.exited
}

func (c *combiner) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// writeTx runs fn in the store's shared write transaction, inside a savepoint of its own
// (see the comment above). fn runs on the combiner's goroutine; its statements go through
// tx, never through a context of their own.
func (s *Store) writeTx(ctx context.Context, fn func(tx *txStmts) error) error {
	return s.c.do(ctx, false, fn)
}

// writeTxAlone is writeTx for a write that may take long: it gets a transaction of its
// own, so no other function waits for its commit.
func (s *Store) writeTxAlone(ctx context.Context, fn func(tx *txStmts) error) error {
	return s.c.do(ctx, true, fn)
}

func (c *combiner) do(ctx context.Context, alone bool, fn func(tx *txStmts) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, alone: alone, done: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	c.signal()
	if h := c.hooks.Load(); h != nil && h.queued != nil {
		h.queued()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqWaiting, reqLeft) {
			return ctx.Err()
		}
		<-r.done // it runs: its commit decides
	}
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.err
}

func (c *combiner) loop() {
	defer close(c.exited)
	for {
		batch, ok := c.next()
		if !ok {
			return
		}
		if rest := c.run(batch); len(rest) > 0 {
			c.mu.Lock()
			c.queue = append(rest, c.queue...)
			c.mu.Unlock()
		}
	}
}

// next waits for functions and takes those queued now, at most maxFns, the callers that
// left dropped. ok is false once the store is closed and nothing is left.
func (c *combiner) next() (batch []*writeReq, ok bool) {
	for {
		c.mu.Lock()
		maxFns := c.maxFns
		q := c.queue
		i := 0
		for ; i < len(q) && len(batch) < maxFns; i++ {
			if q[i].state.Load() == reqWaiting {
				batch = append(batch, q[i])
			}
		}
		c.queue = q[i:]
		if len(c.queue) == 0 {
			c.queue = nil
		}
		closed := c.closed
		c.mu.Unlock()
		if len(batch) > 0 {
			return batch, true
		}
		if closed {
			return nil, false
		}
		<-c.wake
	}
}

// run runs batch's functions in one transaction and returns those it did not start (the
// caller queues them first for the next transaction).
func (c *combiner) run(batch []*writeReq) (rest []*writeReq) {
	tx, err := c.w.BeginTx(context.Background(), nil)
	if err != nil {
		err = fmt.Errorf("begin: %w", err)
		for _, r := range batch {
			if r.take() {
				r.finish(err)
			}
		}
		return nil
	}
	t := newTxStmts(tx)
	c.mu.Lock()
	maxTime := c.maxTime
	c.mu.Unlock()
	start := time.Now()
	var ran []*writeReq
	fail := func(err error) {
		tx.Rollback()
		for _, r := range ran {
			if r.err == nil {
				r.err = err
			}
			close(r.done)
		}
	}
	for i, r := range batch {
		if len(ran) > 0 && (r.alone || ran[0].alone || time.Since(start) >= maxTime) {
			rest = batch[i:]
			break
		}
		if !r.take() {
			continue
		}
		if err := r.ctx.Err(); err != nil {
			r.finish(err) // it wrote nothing: no need to wait for the commit
			continue
		}
		ran = append(ran, r)
		if err := runInSavepoint(t, r); err != nil {
			fail(fmt.Errorf("shared write transaction: %w", err))
			return batch[i+1:]
		}
	}
	if len(ran) == 0 {
		tx.Rollback()
		return rest
	}
	if h := c.hooks.Load(); h != nil && h.commit != nil {
		if err := h.commit(len(ran)); err != nil {
			fail(fmt.Errorf("commit: %w", err))
			return rest
		}
	}
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("commit: %w", err))
		return rest
	}
	for _, r := range ran {
		close(r.done)
	}
	return rest
}

// runInSavepoint runs r's function inside writeSavepoint, rolled back to when the
// function fails or panics; r.err gets the function's error. An error returned is the
// savepoint machinery's (the function's own, when a savepoint it nests failed): the
// transaction can no longer be trusted.
func runInSavepoint(t *txStmts, r *writeReq) error {
	err := inSavepoint(stmtCtx, t, writeSavepoint, func() error {
		r.panicked, r.err = callFn(t, r.fn)
		if r.panicked != nil && r.err == nil {
			r.err = fmt.Errorf("write function panicked: %v", r.panicked)
		}
		return r.err
	})
	if errors.As(err, new(errSavepoint)) {
		return err
	}
	return nil
}

func callFn(t *txStmts, fn func(tx *txStmts) error) (panicked any, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked = p
		}
	}()
	return nil, fn(t)
}
