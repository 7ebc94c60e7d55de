package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

const spamPGCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage postgres "{{PGDSN}}" {
			schema {{SCHEMA}}
		}
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		spam {
			time_trap 1ms 1h
		}
		notify email sales@example.com
	}
}
`

// sharedSpamKey writes the same spam.key into a new instance directory, as an operator
// copies the file to every instance behind one load balancer (docs/caddyfile.md).
func sharedSpamKey(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	keyDir := filepath.Join(dir, "data", "caddy", "form_outbox")
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("5a", 32) + "\n"
	if err := os.WriteFile(filepath.Join(keyDir, "spam.key"), []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func postTokenJSON(t *testing.T, p *caddyProc, message, field, token string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": message, field: token})
	req, err := http.NewRequest(http.MethodPost, p.URL("/contact"), strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, text := do(t, req)
	var a struct{ ID, Status string }
	if err := json.Unmarshal([]byte(text), &a); resp.StatusCode != http.StatusOK || err != nil || a.Status != "accepted" {
		t.Fatalf("post %q: %d %s (%v), want 200 accepted", message, resp.StatusCode, text, err)
	}
	return a.ID
}

// A time-trap token is single use across instances sharing a PostgreSQL database: issued
// and used by instance A, posted again with other content to instance B, it is the
// time_trap_reused signal there, while its first use carries no time-trap signal.
func TestPostgresTimeTrapTokenIsSingleUseAcrossInstances(t *testing.T) {
	t.Parallel()
	pc := storetest.NewPostgresSchemaName(t)
	cf := strings.NewReplacer("{{PGDSN}}", pc.DSN, "{{SCHEMA}}", pc.Schema).Replace(spamPGCaddyfile)
	a := newCaddy(t, caddyOpts{Dir: sharedSpamKey(t), Caddyfile: cf})
	b := newCaddy(t, caddyOpts{Dir: sharedSpamKey(t), Caddyfile: cf})

	req, _ := http.NewRequest(http.MethodGet, a.URL("/contact?form_outbox=token"), nil)
	resp, text := do(t, req)
	var tok struct{ Token, Field string }
	if err := json.Unmarshal([]byte(text), &tok); resp.StatusCode != http.StatusOK || err != nil || tok.Token == "" {
		t.Fatalf("token from A: %d %s (%v)", resp.StatusCode, text, err)
	}
	first := postTokenJSON(t, a, "first use on A", tok.Field, tok.Token)
	replay := postTokenJSON(t, b, "replayed on B", tok.Field, tok.Token)

	// Unknown connection-string parameters are session settings to pgx.
	sep := "?"
	if strings.Contains(pc.DSN, "?") {
		sep = "&"
	}
	conn := pgConn(t, pc.DSN+sep+"search_path="+pc.Schema)
	ctx := context.Background()
	signals := func(id string) string {
		var data string
		if err := conn.QueryRow(ctx, `SELECT data::text FROM events WHERE kind = 'submission.received' AND submission_id = $1::uuid`, id).Scan(&data); err != nil {
			t.Fatalf("received event of %s: %v", id, err)
		}
		var d struct{ Signals []struct{ Name string } }
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			t.Fatalf("event data %s: %v", data, err)
		}
		var names []string
		for _, s := range d.Signals {
			names = append(names, s.Name)
		}
		return strings.Join(names, ",")
	}
	if got := signals(first); got != "" {
		t.Errorf("first use on A: signals %q, want none", got)
	}
	if got := signals(replay); got != "time_trap_reused" {
		t.Errorf("reuse on B: signals %q, want time_trap_reused", got)
	}
}
