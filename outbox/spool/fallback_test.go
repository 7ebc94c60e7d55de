package spool

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// StartFallback drains what waits in the spool at once and reports the pass that stored
// something, which is when the delivery workers must be woken; after Stop the spool is
// still open for the next App of a reload.
func TestStartFallbackDrainsAndReportsStored(t *testing.T) {
	s := openSpool(t, t.TempDir(), Options{})
	store := storetest.OpenSQLite(t)
	es := appendN(t, s, 3)
	stored := make(chan struct{}, 10)
	var (
		mu       sync.Mutex
		replayed []StoredPost
	)
	f := StartFallback(s, store, nil, func() { stored <- struct{}{} }, func(p StoredPost) {
		mu.Lock()
		defer mu.Unlock()
		replayed = append(replayed, p)
	})
	select {
	case <-stored:
	case <-time.After(10 * time.Second):
		t.Fatal("no pass reported stored entries")
	}
	f.Stop()
	if n := f.Waiting(); n != 0 {
		t.Errorf("%d entries still waiting after the pass, want 0", n)
	}
	for i, e := range es {
		if _, err := store.GetSubmission(context.Background(), e.Submission.ID); err != nil {
			t.Errorf("spooled submission %s not stored: %v", e.Submission.ID, err)
		}
		mu.Lock()
		if i >= len(replayed) || replayed[i].Form != e.Submission.Form || !replayed[i].CreatedAt.Equal(e.Submission.CreatedAt) {
			t.Errorf("replayed posts %+v, want %s's form and time at %d (the ledger counts them)", replayed, e.Submission.ID, i)
		}
		mu.Unlock()
	}
	if _, err := f.Replayer.ReplayNow(context.Background()); err != nil {
		t.Errorf("the spool was closed by Stop: %v", err)
	}
}

func TestCheckMode(t *testing.T) {
	for _, m := range []string{ModeFallback, ModeOff, ModeAlways} {
		if err := CheckMode(m); err != nil {
			t.Errorf("mode %q: %v", m, err)
		}
	}
	if err := CheckMode("sometimes"); err == nil {
		t.Error(`mode "sometimes" accepted`)
	}
}
