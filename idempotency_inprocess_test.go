package formoutbox

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// postKeyed posts a JSON body with an Idempotency-Key and decodes the answer.
func postKeyed(t *testing.T, addr, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/contact", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	var a map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("answer (%d): %v", resp.StatusCode, err)
	}
	return resp.StatusCode, a
}

// Through Caddy: a 422 post, then its correction with the same Idempotency-Key is
// stored, answered accepted and delivered; an Idempotency-Key header that is not UTF-8
// is answered 400 and never reaches the store or the spool, even with the store down.
func TestInProcessCorrectedPostWithSameKeyIsDelivered(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	runCaddy(t, map[string]any{
		"form_outbox": spoolApp(dir, map[string]any{"dir": filepath.Join(dir, "spool")}),
		"http":        httpApp(addr, contactHandler()),
	})
	code, a := postKeyed(t, addr, "K", `{"name":"Ada","email":"not-an-address"}`)
	if code != http.StatusUnprocessableEntity || a["status"] != "quarantined" {
		t.Fatalf("invalid email: %d %v, want 422 quarantined", code, a)
	}
	code, a = postKeyed(t, addr, "K", `{"name":"Ada","email":"ada@example.com"}`)
	if code != http.StatusOK || a["status"] != "accepted" || a["duplicate"] != nil {
		t.Fatalf("corrected post with the same key: %d %v, want 200 accepted, not duplicate", code, a)
	}
	mailDir := filepath.Join(dir, "mail")
	waitFor(t, "the corrected post's email", func() bool { return len(emlFiles(t, mailDir)) == 1 })

	app := runningApp(t)
	if err := app.store.Close(); err != nil {
		t.Fatal(err)
	}
	code, a = postKeyed(t, addr, "bad-\xff", `{"name":"Ada","email":"ada@example.com"}`)
	if code != http.StatusBadRequest || a["error"] != "idempotency key must be valid UTF-8" {
		t.Fatalf("invalid UTF-8 key: %d %v, want 400", code, a)
	}
	if n, _, on := app.SpoolStats(); !on || n != 0 {
		t.Errorf("spool entries = %d (on %v), want none", n, on)
	}
}
