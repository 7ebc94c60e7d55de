package file_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/file"
)

func message(i int) providers.Message {
	return providers.Message{ID: fmt.Sprintf("d-%03d", i), Channel: "email", To: "sales@example.com", Subject: "Hello", Text: "Body"}
}

// sendParallel sends n messages at once and returns their errors.
func sendParallel(p *file.Provider, n int) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = p.Send(context.Background(), message(i))
		}()
	}
	wg.Wait()
	return errs
}

// TestConcurrentSendsShareFolderSyncs: 32 sends that renamed their files while a folder
// sync ran are all made durable by the next one, two folder syncs in all instead of 32,
// and every .eml is in place when its send returns.
func TestConcurrentSendsShareFolderSyncs(t *testing.T) {
	dir := t.TempDir()
	p := newProvider(t, dir)
	const n = 32
	var syncs, joined atomic.Int64
	allJoined := make(chan struct{})
	// A send joins the sync queue right after its rename.
	file.OnSyncJoined(p, func() {
		if joined.Add(1) == n {
			close(allJoined)
		}
	})
	file.CountDirSyncs(p, func() {
		if syncs.Add(1) > 1 {
			return
		}
		// Hold the first sync until every send has renamed its file and queued.
		select {
		case <-allJoined:
		case <-time.After(30 * time.Second):
		}
	})
	for i, err := range sendParallel(p, n) {
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	for i := range n {
		if _, err := os.Stat(p.Path(message(i).ID)); err != nil {
			t.Fatalf("after its send returned: %v", err)
		}
	}
	if got := syncs.Load(); got != 2 {
		t.Fatalf("%d folder syncs for %d concurrent sends, want 2 (the held one and one for all that renamed meanwhile)", got, n)
	}
}

// BenchmarkParallelSends is 32 sends at once into one folder, the folder syncs shared
// and, side by side, one folder sync per mail.
func BenchmarkParallelSends(b *testing.B) {
	for _, mode := range []string{"shared", "per-mail"} {
		b.Run(mode, func(b *testing.B) {
			p, err := file.New(file.Config{Dir: b.TempDir(), From: "Example Forms <forms@example.com>"})
			if err != nil {
				b.Fatal(err)
			}
			if mode == "per-mail" {
				file.SyncDirPerMail(p)
			}
			b.ResetTimer()
			for range b.N {
				for i, err := range sendParallel(p, 32) {
					if err != nil {
						b.Fatalf("send %d: %v", i, err)
					}
				}
			}
		})
	}
}
