package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Run is the conformance suite: every outbox.Store implementation must pass it. open
// returns a fresh, empty store for each subtest.
func Run(t *testing.T, open func(testing.TB) outbox.Store) {
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

type suiteCase struct {
	name string
	fn   func(t *testing.T, s outbox.Store)
}

var suite []suiteCase

func register(name string, fn func(t *testing.T, s outbox.Store)) struct{} {
	suite = append(suite, suiteCase{name, fn})
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
	res, err := s.Accept(testCtx(t), sub, deliveries)
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	return res
}
