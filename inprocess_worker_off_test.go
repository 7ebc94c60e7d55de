package formoutbox

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// With `worker off` the instance takes submissions and leaves their deliveries pending
// for the instances that deliver; its health is fine without a running worker.
func TestInProcessWorkerOffTakesSubmissionsAndDeliversNone(t *testing.T) {
	dir := t.TempDir()
	mailDir := filepath.Join(dir, "mail")
	addr := freeAddr(t)
	runCaddy(t, map[string]any{
		"form_outbox": map[string]any{
			"storage": map[string]any{"driver": "sqlite", "path": filepath.Join(dir, "forms.db")},
			"email":   map[string]any{"from": "forms@example.com", "file": map[string]any{"dir": mailDir}},
			"worker":  map[string]any{"disabled": true},
		},
		"http": httpApp(addr, contactHandler()),
	})

	resp := postContact(t, addr)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /contact: got %d, want 303", resp.StatusCode)
	}
	app := runningApp(t)
	sub := onlySubmission(t, app.store)
	ds, err := app.store.ListDeliveries(context.Background(), sub.ID)
	if err != nil || len(ds) != 1 || ds[0].Status != outbox.DeliveryPending || ds[0].Attempts != 0 {
		t.Fatalf("deliveries %+v (%v), want one pending, never attempted", ds, err)
	}
	h := app.health(context.Background())
	if h.Status != "ok" || !h.Worker.Disabled || h.Worker.Running || h.Worker.LastTick != nil {
		t.Fatalf("health %+v, want ok with the worker disabled, not running and never polled", h)
	}

	// The delivery is there for whichever worker runs: one on the same store sends it.
	sender, err := app.buildSender()
	if err != nil {
		t.Fatal(err)
	}
	w := outbox.NewWorker(app.workerConfig(sender))
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	waitFor(t, "another worker to deliver the pending e-mail", func() bool { return len(emlFiles(t, mailDir)) == 1 })
}
