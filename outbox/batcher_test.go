package outbox

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
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

// A flush that answers fewer results than it got items fails every caller of the batch:
// none can tell which result is its own, and a zero result must not read as a success.
func TestBatcherShortFlushFailsEveryCaller(t *testing.T) {
	var b batcher[string, string]
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	flushes := 0
	flush := func(items []string) []string {
		flushes++
		if flushes == 1 {
			started <- struct{}{}
			<-release // the first flush holds the flusher while the second batch fills
			return []string{"done " + items[0]}
		}
		return []string{"only one"}
	}
	lim := batchLimits{max: 64, flushers: 1}
	first := make(chan doResult, 1)
	go func() {
		r, err := b.do(context.Background(), "a", lim, flush)
		first <- doResult{r, err}
	}()
	<-started
	var chs []chan doResult
	for _, it := range []string{"b", "c", "d"} {
		ch := make(chan doResult, 1)
		chs = append(chs, ch)
		go func() {
			r, err := b.do(context.Background(), it, lim, flush)
			ch <- doResult{r, err}
		}()
	}
	waitBatched(t, &b, 3)
	close(release)
	if r := waitResult(t, "a", first); r.err != nil || r.res != "done a" {
		t.Fatalf("a = %q, %v; want done a", r.res, r.err)
	}
	for i, ch := range chs {
		r := waitResult(t, fmt.Sprint("caller ", i), ch)
		if r.err == nil || r.res != "" || !strings.Contains(r.err.Error(), "answered 1 results for 3 items") {
			t.Errorf("caller %d = %q, %v; want no result and the flush's count error", i, r.res, r.err)
		}
	}
}

// waitBatched waits until the open batch holds n items.
func waitBatched(t *testing.T, b *batcher[string, string], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		got := 0
		if b.open != nil {
			got = len(b.open.items)
		}
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("open batch holds %d items, want %d", got, n)
		}
		runtime.Gosched()
	}
}
