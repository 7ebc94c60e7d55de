package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// TestLockPrunerIsExclusiveAcrossInstances: two pools on one schema stand for two Caddy
// instances; only one may prune at a time, and the lock is free again after unlock.
func TestLockPrunerIsExclusiveAcrossInstances(t *testing.T) {
	cfg := storetest.NewPostgresSchema(t)
	a := storetest.OpenPostgresAt(t, cfg)
	b := storetest.OpenPostgresAt(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	unlock, ok, err := a.LockPruner(ctx)
	if err != nil || !ok {
		t.Fatalf("instance a: ok %v err %v", ok, err)
	}
	if _, ok, err := b.LockPruner(ctx); err != nil || ok {
		t.Fatalf("instance b while a prunes: ok %v err %v, want not ok", ok, err)
	}
	unlock()
	unlockB, ok, err := b.LockPruner(ctx)
	if err != nil || !ok {
		t.Fatalf("instance b after a finished: ok %v err %v", ok, err)
	}
	unlockB()
}
