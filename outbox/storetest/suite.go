package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Run is the conformance suite: every outbox.Store implementation must pass it. open
// returns a fresh, empty store for each subtest, isolated from every other store it
// returned (its own SQLite file, its own PostgreSQL schema: see PostgresPool), because
// the cases run in parallel. Nothing else is shared between cases: every time in the
// suite derives from the fixed t0 (clock.go) and no case touches process-wide state.
// The one exclusive resource is the CPU, see registerAlone.
func Run(t *testing.T, open func(testing.TB) outbox.Store) {
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.alone {
				alone.Lock()
				defer alone.Unlock()
			} else {
				alone.RLock()
				defer alone.RUnlock()
			}
			tc.fn(t, open(t))
		})
	}
}

type suiteCase struct {
	name  string
	fn    func(t *testing.T, s outbox.Store)
	alone bool
}

var suite []suiteCase

// alone is held for writing by a case registered with registerAlone and for reading by
// every other case, across all Runs of the process (both stores run side by side).
var alone sync.RWMutex

func register(name string, fn func(t *testing.T, s outbox.Store)) struct{} {
	suite = append(suite, suiteCase{name: name, fn: fn})
	return struct{}{}
}

// registerAlone registers a case that runs with no other case of any store beside it.
// It is for cases that keep every core busy on their own (GroupCommitConcurrentIdempotency
// sends 32,000 submissions from 64 goroutines): beside the other cases on a 2-core
// machine they overran their testCtx bound, and what they assert (that batches formed
// under their own load and every answer followed its commit) does not need company.
func registerAlone(name string, fn func(t *testing.T, s outbox.Store)) struct{} {
	suite = append(suite, suiteCase{name: name, fn: fn, alone: true})
	return struct{}{}
}

// testCtx bounds each store call so a hung database fails the test instead of the run.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// MustAccept accepts sub with deliveries and fails t on error.
func MustAccept(t testing.TB, s outbox.Store, sub *outbox.Submission, deliveries ...outbox.Delivery) outbox.AcceptResult {
	t.Helper()
	res, err := outbox.AcceptOne(testCtx(t), s, sub, deliveries)
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	return res
}
