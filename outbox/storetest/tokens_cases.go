package storetest

import (
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// A spam token is single use: its first use and a repeat by the same content (a retried
// post) pass, another post's use of it does not, whichever store instance records it.
var _ = register("UsedTokensAreSingleUse", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	l, ok := s.(outbox.TokenLedger)
	if !ok {
		t.Fatalf("%T is not an outbox.TokenLedger", s)
	}
	expires := time.Now().Add(time.Hour)
	for _, c := range []struct {
		id, hash string
		want     bool
	}{
		{"tt:a", "h1", true},
		{"tt:a", "h1", true},  // the same post again (a retry)
		{"tt:a", "h2", false}, // another post with the same token
		{"tt:b", "h2", true},
		{"pow:a", "h3", true}, // ids of other token kinds do not collide
		{"tt:a", "h1", true},  // the first post is still itself after a reuse was refused
	} {
		got, err := l.UseToken(ctx, c.id, c.hash, expires)
		if err != nil || got != c.want {
			t.Errorf("UseToken(%s, %s) = %v (%v), want %v", c.id, c.hash, got, err, c.want)
		}
	}
})

// The pruner deletes used tokens past their expiry and keeps the others, whatever the
// retention cutoff.
var _ = register("PruneDeletesExpiredUsedTokens", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	l := s.(outbox.TokenLedger)
	if _, err := l.UseToken(ctx, "tt:old", "h1", time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.UseToken(ctx, "tt:live", "h1", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(ctx, time.Now().Add(-24*time.Hour), 100); err != nil {
		t.Fatalf("prune: %v", err)
	}
	// A pruned token is free again (and refused as expired by intake on its own); a
	// live one still remembers its first post.
	if fresh, err := l.UseToken(ctx, "tt:old", "h2", time.Now().Add(time.Hour)); err != nil || !fresh {
		t.Errorf("expired token after prune: fresh=%v (%v), want its row gone", fresh, err)
	}
	if fresh, err := l.UseToken(ctx, "tt:live", "h2", time.Now().Add(time.Hour)); err != nil || fresh {
		t.Errorf("live token after prune: fresh=%v (%v), want still used", fresh, err)
	}
})
