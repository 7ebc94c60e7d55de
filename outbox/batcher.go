package outbox

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// batchLimits bound one batcher: at most max items per flush, at most flushers flushes at
// once, and a leader that finds another flush running waits up to linger for company.
type batchLimits struct {
	max      int
	linger   time.Duration
	flushers int
}

// batcher gathers concurrent calls into batches and runs one flush per batch. The first
// caller of a batch starts a goroutine that leads it (waits for a flusher slot, runs the
// flush); every caller, the first included, only waits for the result or its own ctx.
// Leading in the caller's own goroutine made the first caller of a batch wait out a stuck
// flush (SQLite's busy timeout behind another process's lock) and the flush queued behind
// it, whatever its deadline. Its zero value is ready to use.
//
// The linger only applies under load: a leader that finds no flush running flushes at
// once, so a lone request pays no extra latency. When flushes are running (or all
// flushers are busy), the open batch keeps filling until it is full, the linger ends and a
// flusher is free, which is where the throughput comes from.
type batcher[T, R any] struct {
	mu       sync.Mutex
	open     *batch[T, R]
	inflight int
	sem      chan struct{}
}

type batch[T, R any] struct {
	items   []T
	ctxs    []context.Context // each item's caller's; see lead
	results []R
	dropped []bool        // items left out of the flush because their callers had gone
	short   error         // the flush answered another number of results than it got items
	full    chan struct{} // closed when the batch reached its limit
	done    chan struct{} // closed once results are set
}

// do adds item to the open batch (or opens one) and returns its result once the flush
// holding it has returned. If ctx ends first, do returns ctx's error at once; a flush
// already running still runs, and item may still be written, but an item whose ctx ended
// before its batch's flush began is left out of it.
func (b *batcher[T, R]) do(ctx context.Context, item T, lim batchLimits, flush func([]T) []R) (R, error) {
	b.mu.Lock()
	if b.sem == nil {
		b.sem = make(chan struct{}, max(lim.flushers, 1))
	}
	bt, leader := b.open, false
	if bt == nil {
		bt = &batch[T, R]{full: make(chan struct{}), done: make(chan struct{})}
		b.open, leader = bt, true
	}
	i := len(bt.items)
	bt.items = append(bt.items, item)
	bt.ctxs = append(bt.ctxs, ctx)
	if len(bt.items) >= max(lim.max, 1) {
		b.open = nil
		close(bt.full)
	}
	busy := b.inflight > 0
	b.mu.Unlock()

	if leader {
		go b.lead(bt, busy, lim, flush)
	}
	var zero R
	select {
	case <-bt.done:
		if bt.dropped[i] {
			return zero, ctx.Err()
		}
		if bt.short != nil {
			return zero, bt.short
		}
		return bt.results[i], nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// lead waits for company when flushes are running, takes a flusher slot, closes the batch
// to newcomers and flushes it.
func (b *batcher[T, R]) lead(bt *batch[T, R], busy bool, lim batchLimits, flush func([]T) []R) {
	if busy && lim.linger > 0 {
		t := time.NewTimer(lim.linger)
		select {
		case <-bt.full:
		case <-t.C:
		}
		t.Stop()
	}
	b.sem <- struct{}{}
	b.mu.Lock()
	if b.open == bt {
		b.open = nil
	}
	b.inflight++
	items, ctxs := bt.items, bt.ctxs
	b.mu.Unlock()

	results, dropped, short := flushLive(items, ctxs, flush)

	b.mu.Lock()
	b.inflight--
	b.mu.Unlock()
	<-b.sem
	bt.results, bt.dropped, bt.short = results, dropped, short
	close(bt.done)
}

// flushLive flushes the items whose callers still wait. A caller that has gone was told
// its ctx's error and, at intake, has spooled its submission or answered 503; writing its
// item anyway would only add work while the store is slow, which is when callers go, and
// a batch nobody waits for any more costs no transaction at all. A flush that answers
// another number of results than it was given items is an error for every caller of the
// batch: no caller can tell which result is its own, and a zero one must never read as
// a success (an accept's zero outcome has no error).
func flushLive[T, R any](items []T, ctxs []context.Context, flush func([]T) []R) ([]R, []bool, error) {
	dropped := make([]bool, len(items))
	gone := 0
	for i, c := range ctxs {
		if c.Err() != nil {
			dropped[i] = true
			gone++
		}
	}
	if gone == len(items) {
		return make([]R, len(items)), dropped, nil
	}
	live := items
	if gone > 0 {
		live = make([]T, 0, len(items)-gone)
		for i, it := range items {
			if !dropped[i] {
				live = append(live, it)
			}
		}
	}
	res := flush(live)
	if len(res) != len(live) {
		return nil, dropped, fmt.Errorf("batch flush answered %d results for %d items", len(res), len(live))
	}
	if gone == 0 {
		return res, dropped, nil
	}
	results := make([]R, len(items))
	j := 0
	for i := range items {
		if !dropped[i] {
			results[i] = res[j]
			j++
		}
	}
	return results, dropped, nil
}
