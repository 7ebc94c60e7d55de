package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// stuckFlush is a flush that records the batches it gets and, until released, blocks
// the first one, as a store does while another process holds the database's lock.
type stuckFlush struct {
	mu      sync.Mutex
	batches [][]string
	started chan struct{} // closed when the first flush began
	release chan struct{}
	once    sync.Once
}

func newStuckFlush(t *testing.T) *stuckFlush {
	f := &stuckFlush{started: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(f.unblock)
	return f
}

func (f *stuckFlush) unblock() { f.once.Do(func() { close(f.release) }) }

func (f *stuckFlush) flush(items []string) []string {
	f.mu.Lock()
	f.batches = append(f.batches, slices.Clone(items))
	first := len(f.batches) == 1
	f.mu.Unlock()
	if first {
		close(f.started)
		<-f.release
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = "done " + it
	}
	return out
}

type doResult struct {
	res string
	err error
}

func goDo(ctx context.Context, b *batcher[string, string], item string, f *stuckFlush) chan doResult {
	ch := make(chan doResult, 1)
	go func() {
		r, err := b.do(ctx, item, batchLimits{max: 64, flushers: 1}, f.flush)
		ch <- doResult{r, err}
	}()
	return ch
}

func waitResult(t *testing.T, what string, ch chan doResult) doResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer after 10s", what)
		return doResult{}
	}
}

// The first caller of a batch leads its flush, but hears its own deadline like every
// other caller when that flush is stuck.
func TestBatcherLeaderReturnsAtItsDeadlineWhileItsFlushIsStuck(t *testing.T) {
	var b batcher[string, string]
	f := newStuckFlush(t)
	ctx, cancel := context.WithCancel(context.Background())
	first := goDo(ctx, &b, "a", f)
	<-f.started
	cancel()
	if r := waitResult(t, "leader of a stuck flush", first); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("leader answered %+v, want its context's error", r)
	}
}

// A caller waiting for a flusher slot hears its deadline too, and an item whose caller
// has gone before its batch is flushed is not written; the others of its batch are.
func TestBatcherLeavesOutItemsWhoseCallersHaveGone(t *testing.T) {
	var b batcher[string, string]
	f := newStuckFlush(t)
	first := goDo(context.Background(), &b, "a", f)
	<-f.started
	ctx, cancel := context.WithCancel(context.Background())
	gone := goDo(ctx, &b, "gone", f)
	cancel()
	if r := waitResult(t, "caller waiting for a flusher", gone); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("caller waiting for a flusher answered %+v, want its context's error", r)
	}
	stays := goDo(context.Background(), &b, "stays", f)
	f.unblock()
	if r := waitResult(t, "first", first); r.err != nil || r.res != "done a" {
		t.Fatalf("first: %+v", r)
	}
	if r := waitResult(t, "stays", stays); r.err != nil || r.res != "done stays" {
		t.Fatalf("stays: %+v", r)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := fmt.Sprint(f.batches); got != "[[a] [stays]]" {
		t.Fatalf("flushed %s, want [[a] [stays]]: the gone caller's item is left out", got)
	}
}
