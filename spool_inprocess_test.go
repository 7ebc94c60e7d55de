package formoutbox

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

type jsonAnswer struct {
	OK     bool   `json:"ok"`
	ID     string `json:"id"`
	Status string `json:"status"`
}

func postContactJSON(t *testing.T, addr string) (*http.Response, jsonAnswer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/contact",
		strings.NewReader(`{"name":"Ada","email":"ada@example.com","message":"spooled hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	var a jsonAnswer
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatalf("answer: %v", err)
		}
	}
	return resp, a
}

func spoolApp(dir string, spool map[string]any) map[string]any {
	return map[string]any{
		"spool":   spool,
		"storage": map[string]any{"driver": "sqlite", "path": filepath.Join(dir, "forms.db")},
		"email":   map[string]any{"file": map[string]any{"dir": filepath.Join(dir, "mail")}},
	}
}

// With the store down, the submission is fsynced to the spool and the visitor hears
// "queued"; the spooled record holds the submission, ready for replay.
func TestInProcessStoreFailureSpoolsAndAnswersQueued(t *testing.T) {
	dir := t.TempDir()
	spoolDir := filepath.Join(dir, "spool")
	addr := freeAddr(t)
	runCaddy(t, map[string]any{
		"form_outbox": spoolApp(dir, map[string]any{"dir": spoolDir}),
		"http":        httpApp(addr, contactHandler()),
	})
	app := runningApp(t)
	if err := app.store.Close(); err != nil {
		t.Fatal(err)
	}
	resp, a := postContactJSON(t, addr)
	if resp.StatusCode != http.StatusOK || !a.OK || a.Status != "queued" {
		t.Fatalf("POST with the store down: %d %+v, want 200 queued", resp.StatusCode, a)
	}
	if n, _, on := app.SpoolStats(); !on || n != 1 {
		t.Fatalf("spool entries = %d (on %v), want 1", n, on)
	}
	if h := app.health(context.Background()); h.Spool == nil || !h.Spool.Enabled || h.Spool.Depth != 1 {
		t.Fatalf("health spool = %+v, want enabled with depth 1", h.Spool)
	}
	// Replay into another database: the visitor's submission, under the answered id.
	other := storetest.OpenSQLite(t)
	rep, err := app.openSpool().Spool.Replay(context.Background(), other, nil)
	if err != nil || rep.Stored != 1 {
		t.Fatalf("replay: %+v, %v", rep, err)
	}
	sub, err := other.GetSubmission(context.Background(), uuid.MustParse(a.ID))
	if err != nil {
		t.Fatalf("replayed submission %s: %v", a.ID, err)
	}
	if v, _ := sub.Data.Get("message"); v != "spooled hello" {
		t.Errorf("replayed message = %q", v)
	}
	if n, _, _ := app.SpoolStats(); n != 0 {
		t.Errorf("spool entries after replay = %d, want 0", n)
	}
}

// When neither the store nor the spool can keep the post, nothing claims success.
func TestInProcessStoreAndSpoolFailureAnswers503(t *testing.T) {
	dir := t.TempDir()
	spoolDir := filepath.Join(dir, "spool")
	addr := freeAddr(t)
	runCaddy(t, map[string]any{
		"form_outbox": spoolApp(dir, map[string]any{"dir": spoolDir}),
		"http":        httpApp(addr, contactHandler()),
	})
	if err := runningApp(t).store.Close(); err != nil {
		t.Fatal(err)
	}
	// The spool's directory vanishes and a file takes its name (a disk gone read-only or
	// unmounted behaves alike): no segment can be created.
	if err := os.RemoveAll(spoolDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spoolDir, []byte("not a dir"), 0o600); err != nil {
		t.Fatal(err)
	}
	resp, _ := postContactJSON(t, addr)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("got %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// Write-ahead mode: every submission is in the spool before the store has it; a healthy
// store answers as usual and the replayer later finds the record stored (a no-op).
func TestInProcessSpoolAlwaysWritesAhead(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	runCaddy(t, map[string]any{
		"form_outbox": spoolApp(dir, map[string]any{"mode": "always", "dir": filepath.Join(dir, "spool")}),
		"http":        httpApp(addr, contactHandler()),
	})
	app := runningApp(t)
	// The background replayer's first pass may run late, after the POST below, and take
	// the record (a duplicate) before it is counted here; stop it and replay by hand.
	app.openSpool().Replayer.Stop()
	resp, a := postContactJSON(t, addr)
	if resp.StatusCode != http.StatusOK || a.Status != "accepted" {
		t.Fatalf("POST: %d %+v, want 200 accepted", resp.StatusCode, a)
	}
	if n, _, _ := app.SpoolStats(); n != 1 {
		t.Fatalf("spool entries = %d, want 1 (written ahead)", n)
	}
	rep, err := app.ReplaySpool(context.Background())
	if err != nil || rep.Stored != 0 || rep.Duplicates != 1 || rep.Remaining != 0 {
		t.Fatalf("replay: %+v, %v; want the one record found already stored", rep, err)
	}
	if got := onlySubmission(t, app.store); got.ID.String() != a.ID {
		t.Fatalf("stored %s, answered %s", got.ID, a.ID)
	}
}
