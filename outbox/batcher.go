package outbox

import (
	"context"
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

// batcher gathers concurrent calls into batches and runs one flush per batch. It starts
// no goroutine: the first caller of a batch is its leader and runs the flush itself, the
// others wait for it. Its zero value is ready to use.
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
	results []R
	full    chan struct{} // closed when the batch reached its limit
	done    chan struct{} // closed once results are set
}

// do adds item to the open batch (or opens one) and returns its result once the flush
// holding it has returned. If ctx ends first, do returns ctx's error; the flush still
// runs, and item may still be written.
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
	if len(bt.items) >= max(lim.max, 1) {
		b.open = nil
		close(bt.full)
	}
	busy := b.inflight > 0
	b.mu.Unlock()

	if leader {
		b.lead(bt, busy, lim, flush)
	}
	select {
	case <-bt.done:
		return bt.results[i], nil
	case <-ctx.Done():
		var zero R
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
	items := bt.items
	b.mu.Unlock()

	results := flush(items)

	b.mu.Lock()
	b.inflight--
	b.mu.Unlock()
	<-b.sem
	bt.results = results
	close(bt.done)
}
