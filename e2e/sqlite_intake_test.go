package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

const sqliteCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		field name required max_length 120
		field email required email
		field message required
		redirect /thanks.html
		notify email sales@example.com ops@example.com {
			subject "New enquiry from {field.name}"
		}
	}
	respond "static site"
}
`

// openSQLite opens the instance's database read-only, as an operator would with sqlite3.
func openSQLite(t *testing.T, path string) *sql.DB {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type storedSubmission struct {
	ID, Status, Reason, Data string
	Deliveries               []string // "route recipient status"
}

// submissionsWhere returns the stored submissions whose data contains marker.
func submissionsWhere(t *testing.T, db *sql.DB, marker string) []storedSubmission {
	t.Helper()
	rows, err := db.Query(`SELECT id, status, reason, data FROM submissions WHERE data LIKE ? ORDER BY created_at`, "%"+marker+"%")
	if err != nil {
		t.Fatalf("query submissions: %v", err)
	}
	var out []storedSubmission
	for rows.Next() {
		var s storedSubmission
		if err := rows.Scan(&s.ID, &s.Status, &s.Reason, &s.Data); err != nil {
			t.Fatalf("scan: %v", err)
		}
		out = append(out, s)
	}
	rows.Close()
	for i := range out {
		drows, err := db.Query(`SELECT route, recipient, status FROM deliveries WHERE submission_id = ? ORDER BY recipient`, out[i].ID)
		if err != nil {
			t.Fatalf("query deliveries: %v", err)
		}
		for drows.Next() {
			var route, rcpt, status string
			if err := drows.Scan(&route, &rcpt, &status); err != nil {
				t.Fatalf("scan: %v", err)
			}
			out[i].Deliveries = append(out[i].Deliveries, route+" "+rcpt+" "+status)
		}
		drows.Close()
	}
	return out
}

func countRows(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func postForm(t *testing.T, p *caddyProc, v url.Values, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.URL("/contact"), strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	for k, val := range hdr {
		req.Header.Set(k, val)
	}
	return do(t, req)
}

func postJSON(t *testing.T, p *caddyProc, body string, hdr map[string]string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.URL("/contact"), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, val := range hdr {
		req.Header.Set(k, val)
	}
	resp, text := do(t, req)
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("answer is not JSON (%d): %q", resp.StatusCode, text)
	}
	return resp, m
}

// deliveredOrDue is the set of statuses a delivery may be in moments after intake: the
// worker may already have taken it.
func deliveredOrDue(s string) bool {
	f := strings.Fields(s)
	switch f[len(f)-1] {
	case "pending", "sending", "sent":
		return true
	}
	return false
}

func TestSQLiteIntakeThroughCaddy(t *testing.T) {
	t.Parallel()
	p := newCaddy(t, caddyOpts{Caddyfile: sqliteCaddyfile})
	dbPath := filepath.Join(p.dir, "forms.db")

	// An HTML form post (urlencoded) is answered 303 to the redirect, after commit.
	resp, _ := postForm(t, p, url.Values{"name": {"Ada"}, "email": {"ada@example.com"}, "message": {"m-urlencoded"}}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/thanks.html" {
		t.Fatalf("urlencoded: got %d Location %q, want 303 /thanks.html", resp.StatusCode, resp.Header.Get("Location"))
	}

	// Multipart, as a form with enctype="multipart/form-data" sends it.
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	mw.WriteField("name", "Grace")
	mw.WriteField("email", "grace@example.com")
	mw.WriteField("message", "m-multipart")
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, p.URL("/contact"), &mp)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, _ = do(t, req)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("multipart: got %d, want 303", resp.StatusCode)
	}

	// A JSON client gets the id and the stored status.
	resp, ans := postJSON(t, p, `{"name":"Linus","email":"linus@example.com","message":"m-json"}`, map[string]string{"Idempotency-Key": "key-1"})
	if resp.StatusCode != http.StatusOK || ans["ok"] != true || ans["status"] != "accepted" {
		t.Fatalf("json: got %d %v", resp.StatusCode, ans)
	}
	jsonID, _ := ans["id"].(string)

	// The same idempotency key again: the original id, nothing new written.
	resp, ans2 := postJSON(t, p, `{"name":"Linus","email":"linus@example.com","message":"m-json"}`, map[string]string{"Idempotency-Key": "key-1"})
	if resp.StatusCode != http.StatusOK || ans2["id"] != jsonID {
		t.Fatalf("repeat: got %d %v, want the original id %s", resp.StatusCode, ans2, jsonID)
	}

	// A bot filling the honeypot is answered like a person, and stored as spam.
	resp, _ = postForm(t, p, url.Values{"name": {"Bot"}, "email": {"bot@example.com"}, "message": {"m-spam"}, "_gotcha": {"http://spam"}}, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("honeypot: got %d, want 303 like success", resp.StatusCode)
	}

	// A schema violation is stored as quarantined and answered 422 with per-field errors.
	resp, ans = postJSON(t, p, `{"name":"NoMail","message":"m-invalid"}`, nil)
	if resp.StatusCode != http.StatusUnprocessableEntity || ans["ok"] != false || ans["status"] != "quarantined" {
		t.Fatalf("invalid: got %d %v, want 422 quarantined", resp.StatusCode, ans)
	}

	// A body over the default 256 KiB limit is refused before parsing, and nothing is stored.
	resp, _ = postForm(t, p, url.Values{"name": {"Big"}, "email": {"big@example.com"}, "message": {strings.Repeat("x", 300<<10)}}, nil)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized: got %d, want 413", resp.StatusCode)
	}

	// GET of the same path is not ours: the site answers.
	resp, body := do(t, mustReq(http.MethodGet, p.URL("/contact")))
	if resp.StatusCode != http.StatusOK || body != "static site" {
		t.Fatalf("GET /contact: got %d %q", resp.StatusCode, body)
	}

	db := openSQLite(t, dbPath)
	if n := countRows(t, db, "submissions"); n != 5 {
		t.Fatalf("submissions: %d rows, want 5 (3 accepted, 1 spam, 1 quarantined; the repeat and the 413 write nothing)", n)
	}
	want := map[string]struct{ status, reason, dstatus string }{
		"m-urlencoded": {"accepted", "", "due"},
		"m-multipart":  {"accepted", "", "due"},
		"m-json":       {"accepted", "", "due"},
		"m-spam":       {"spam", "honeypot", "skipped"},
		"m-invalid":    {"quarantined", "schema_violation", "skipped"},
	}
	for marker, w := range want {
		subs := submissionsWhere(t, db, marker)
		if len(subs) != 1 {
			t.Fatalf("%s: %d submissions, want 1", marker, len(subs))
		}
		s := subs[0]
		if s.Status != w.status || s.Reason != w.reason {
			t.Errorf("%s: stored %s/%s, want %s/%s", marker, s.Status, s.Reason, w.status, w.reason)
		}
		if len(s.Deliveries) != 2 {
			t.Fatalf("%s: deliveries %v, want one per recipient", marker, s.Deliveries)
		}
		for i, rcpt := range []string{"ops@example.com", "sales@example.com"} {
			d := s.Deliveries[i]
			if !strings.HasPrefix(d, "email "+rcpt+" ") {
				t.Errorf("%s: delivery %q, want route email to %s", marker, d, rcpt)
			}
			if w.dstatus == "skipped" && !strings.HasSuffix(d, " skipped") || w.dstatus == "due" && !deliveredOrDue(d) {
				t.Errorf("%s: delivery %q, want %s", marker, d, w.dstatus)
			}
		}
	}
	if subs := submissionsWhere(t, db, "m-json"); subs[0].ID != jsonID {
		t.Errorf("json answer id %s, stored id %s", jsonID, subs[0].ID)
	}
	// Field order is the visitor's order.
	if subs := submissionsWhere(t, db, "m-multipart"); !strings.HasPrefix(subs[0].Data, `{"name":"Grace","email":"grace@example.com","message":"m-multipart"`) {
		t.Errorf("multipart data %s: field order not kept", subs[0].Data)
	}
}

// TestSQLiteKill9AfterAnswer proves "answered means stored": SIGKILL right after a 303
// loses neither the submission nor its deliveries.
func TestSQLiteKill9AfterAnswer(t *testing.T) {
	t.Parallel()
	p := newCaddy(t, caddyOpts{Caddyfile: sqliteCaddyfile})
	const n = 5
	for i := 0; i < n; i++ {
		marker := fmt.Sprintf("kill-marker-%d", i)
		resp, _ := postForm(t, p, url.Values{"name": {"K"}, "email": {"k@example.com"}, "message": {marker}}, nil)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("post %d: got %d, want 303", i, resp.StatusCode)
		}
		if i == n-1 {
			p.Kill()
		}
	}
	p.Restart()
	db := openSQLite(t, filepath.Join(p.dir, "forms.db"))
	for i := 0; i < n; i++ {
		marker := fmt.Sprintf("kill-marker-%d", i)
		subs := submissionsWhere(t, db, marker)
		if len(subs) != 1 || subs[0].Status != "accepted" || len(subs[0].Deliveries) != 2 {
			t.Fatalf("%s after kill -9 and restart: %+v, want 1 accepted submission with 2 deliveries", marker, subs)
		}
	}
}

// TestNoGlobalBlockUsesDataDir: the directive alone works, storing in SQLite under
// Caddy's data directory.
func TestNoGlobalBlockUsesDataDir(t *testing.T) {
	t.Parallel()
	p := newCaddy(t, caddyOpts{Caddyfile: `{
	admin 127.0.0.1:{{ADMIN}}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		notify email sales@example.com
	}
}
`})
	resp, ans := postJSON(t, p, `{"name":"Ada","message":"m-default"}`, nil)
	if resp.StatusCode != http.StatusOK || ans["status"] != "accepted" {
		t.Fatalf("got %d %v", resp.StatusCode, ans)
	}
	db := openSQLite(t, filepath.Join(p.dir, "data", "caddy", "form_outbox", "outbox.db"))
	subs := submissionsWhere(t, db, "m-default")
	if len(subs) != 1 || subs[0].ID != ans["id"] || len(subs[0].Deliveries) != 1 {
		t.Fatalf("stored %+v, want the answered submission with one delivery", subs)
	}
}

func mustReq(method, u string) *http.Request {
	r, err := http.NewRequest(method, u, nil)
	if err != nil {
		panic(err)
	}
	return r
}
