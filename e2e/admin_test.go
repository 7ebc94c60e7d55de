package e2e

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

const adminCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: a 410 is checked as dead (retry by hand) here; e2e/park_test.go checks parking.
		park off
		storage {{STORAGE}}
		worker {
			poll_interval 1s
		}
		retry {
			base 1s
			max_delay 1s
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
		field name required
		notify email sales@example.com
	}
	form_outbox /hook {
		form hook
		notify webhook {{HOOK}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
	respond "static site"
}
`

// switchable is a webhook receiver whose answer status the test sets.
type switchable struct {
	srv    *httptest.Server
	status atomic.Int32
	got    atomic.Int32 // 2xx answers
}

func newSwitchable(t *testing.T, status int) *switchable {
	s := &switchable{}
	s.status.Store(int32(status))
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		st := int(s.status.Load())
		if st < 300 {
			s.got.Add(1)
		}
		w.WriteHeader(st)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func adminConfig(storage, hook string) string {
	return strings.NewReplacer("{{STORAGE}}", storage, "{{HOOK}}", hook).Replace(adminCaddyfile)
}

// admin calls the admin API and returns status and body.
func (p *caddyProc) admin(t *testing.T, method, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", p.AdminPort, path), nil)
	resp, body := do(t, req)
	return resp.StatusCode, body
}

func (p *caddyProc) adminJSON(t *testing.T, method, path string, want int, v any) {
	t.Helper()
	code, body := p.admin(t, method, path)
	if code != want {
		t.Fatalf("%s %s = %d %s, want %d", method, path, code, body, want)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(body), v); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, path, body, err)
		}
	}
}

// cli runs `caddy form-outbox ARGS --address <admin>` and returns its output.
func (p *caddyProc) cli(t *testing.T, wantOK bool, args ...string) string {
	t.Helper()
	cmd := exec.Command(caddyBin, append(append([]string{"form-outbox"}, args...), "--address", fmt.Sprintf("127.0.0.1:%d", p.AdminPort))...)
	out, err := cmd.CombinedOutput()
	if (err == nil) != wantOK {
		t.Fatalf("caddy form-outbox %v: err %v (want ok %v)\n%s", args, err, wantOK, out)
	}
	return string(out)
}

func postAdminForm(t *testing.T, p *caddyProc, path string, vals url.Values) string {
	t.Helper()
	return postWithHeaders(t, p, path, vals, nil)
}

// postWithHeaders posts vals to path with extra request headers and returns the id
// the JSON answer names.
func postWithHeaders(t *testing.T, p *caddyProc, path string, vals url.Values, headers map[string]string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.URL(path), strings.NewReader(vals.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, body := do(t, req)
	var ans struct{ ID string }
	json.Unmarshal([]byte(body), &ans)
	if ans.ID == "" {
		t.Fatalf("POST %s = %d %s, want an id", path, resp.StatusCode, body)
	}
	return ans.ID
}

type deliveryJSON struct {
	ID, Status, Route string
	History           []struct{ Outcome string }
}

type submissionJSON struct {
	ID, Form, Status, Reason string
	Data                     map[string]string
	Deliveries               []deliveryJSON
}

func (p *caddyProc) waitDelivery(t *testing.T, subID, status string) deliveryJSON {
	t.Helper()
	var last submissionJSON
	err := waitFor(20*time.Second, func() bool {
		last = submissionJSON{}
		p.adminJSON(t, http.MethodGet, "/form_outbox/submissions/"+subID, 200, &last)
		return len(last.Deliveries) == 1 && last.Deliveries[0].Status == status
	})
	if err != nil {
		t.Fatalf("delivery of %s never became %s: %+v", subID, status, last)
	}
	return last.Deliveries[0]
}

// metric returns the sum of the samples of name whose labels contain every given pair.
func (p *caddyProc) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	_, body := p.admin(t, http.MethodGet, "/metrics")
	sum := 0.0
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			ok = ok && strings.Contains(line, fmt.Sprintf("%s=%q", labels[i], labels[i+1]))
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// waitMetric polls /metrics until the metric has the wanted value.
func (p *caddyProc) waitMetric(t *testing.T, want float64, name string, labels ...string) {
	t.Helper()
	var got float64
	if err := waitFor(20*time.Second, func() bool { got = p.metric(t, name, labels...); return got == want }); err != nil {
		t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
	}
}

// TestAdminAPIAndCLI drives every admin route and CLI command against a running Caddy on
// SQLite: lookups, error statuses, release of a quarantined submission, retry of a dead
// webhook, erasure, and the metrics that move with them.
func TestAdminAPIAndCLI(t *testing.T) {
	t.Parallel()
	hook := newSwitchable(t, http.StatusGone)
	dir := t.TempDir()
	p := newCaddy(t, caddyOpts{Dir: dir, Caddyfile: adminConfig("sqlite {{DIR}}/forms.db", hook.srv.URL)})

	var h struct {
		Status  string
		Storage struct{ Reachable bool }
		Worker  struct{ Running bool }
		Outbox  struct{ Backlog, Dead int64 }
	}
	p.adminJSON(t, http.MethodGet, "/form_outbox/health", 200, &h)
	if h.Status != "ok" || !h.Storage.Reachable || !h.Worker.Running {
		t.Fatalf("health = %+v, want ok", h)
	}

	// A schema violation is stored quarantined; release sends it.
	quarantined := postAdminForm(t, p, "/contact", url.Values{"message": {"no name"}})
	sent := postAdminForm(t, p, "/contact", url.Values{"name": {"Ada"}, "message": {"secret-visitor-text"}})
	p.waitDelivery(t, sent, "sent")
	var q submissionJSON
	p.adminJSON(t, http.MethodGet, "/form_outbox/submissions/"+quarantined, 200, &q)
	if q.Status != "quarantined" || len(q.Deliveries) != 1 || q.Deliveries[0].Status != "skipped" {
		t.Fatalf("quarantined submission = %+v", q)
	}
	var list struct {
		Items []submissionJSON
		Next  string
	}
	p.adminJSON(t, http.MethodGet, "/form_outbox/submissions?status=quarantined&form=contact", 200, &list)
	if len(list.Items) != 1 || list.Items[0].ID != quarantined {
		t.Fatalf("list of quarantined = %+v, want just %s", list.Items, quarantined)
	}
	out := p.cli(t, true, "list", "--status", "quarantined")
	if !strings.Contains(out, quarantined) || !strings.Contains(out, "schema_violation") || strings.Contains(out, sent) {
		t.Errorf("cli list --status quarantined:\n%s", out)
	}
	out = p.cli(t, true, "release", quarantined)
	if strings.TrimSpace(out) != quarantined+" released" {
		t.Errorf("cli release printed %q", out)
	}
	p.waitDelivery(t, quarantined, "sent")
	if _, err := os.Stat(filepath.Join(dir, "mail")); err != nil {
		t.Errorf("mail dir: %v", err)
	}
	p.adminJSON(t, http.MethodPost, "/form_outbox/submissions/"+quarantined+"/release", 409, nil)

	// A webhook answered 410 is dead at once; after the receiver is fixed, retry sends it.
	deadBefore := p.metric(t, "form_outbox_deliveries_total", "outcome", "permanent")
	hookSub := postAdminForm(t, p, "/hook", url.Values{"name": {"Grace"}})
	dead := p.waitDelivery(t, hookSub, "dead")
	if got := p.metric(t, "form_outbox_deliveries_total", "channel", "webhook", "outcome", "permanent"); got != deadBefore+1 {
		t.Errorf("permanent webhook attempts metric = %v, want %v", got, deadBefore+1)
	}
	p.waitMetric(t, 1, "form_outbox_dead_deliveries") // gauges are cached for a few seconds
	out = p.cli(t, true, "list", "--deliveries", "--status", "dead")
	if !strings.Contains(out, dead.ID) || !strings.Contains(out, "dead") {
		t.Errorf("cli list --deliveries --status dead:\n%s", out)
	}
	hook.status.Store(http.StatusOK)
	out = p.cli(t, true, "retry", dead.ID)
	if strings.TrimSpace(out) != dead.ID+" pending" {
		t.Errorf("cli retry printed %q", out)
	}
	fixed := p.waitDelivery(t, hookSub, "sent")
	if len(fixed.History) != 2 || fixed.History[0].Outcome != "permanent" || fixed.History[1].Outcome != "sent" {
		t.Errorf("history after retry = %+v, want permanent then sent", fixed.History)
	}
	p.adminJSON(t, http.MethodPost, "/form_outbox/deliveries/"+dead.ID+"/retry", 409, nil)

	// Metrics moved with posts and sends.
	if got := p.metric(t, "form_outbox_submissions_total", "form", "contact"); got != 2 {
		t.Errorf("form_outbox_submissions_total{form=contact} = %v, want 2", got)
	}
	if got := p.metric(t, "form_outbox_submissions_total", "form", "contact", "status", "quarantined"); got != 1 {
		t.Errorf("quarantined submissions metric = %v, want 1", got)
	}
	if got := p.metric(t, "form_outbox_deliveries_total", "outcome", "sent"); got != 3 {
		t.Errorf("sent attempts metric = %v, want 3", got)
	}
	if got := p.metric(t, "form_outbox_delivery_duration_seconds_count"); got != 4 {
		t.Errorf("delivery duration observations = %v, want 4", got)
	}
	p.waitMetric(t, 0, "form_outbox_dead_deliveries")
	p.waitMetric(t, 0, "form_outbox_backlog")

	// show and status through the CLI.
	out = p.cli(t, true, "show", sent)
	if !strings.Contains(out, "secret-visitor-text") || !strings.Contains(out, "sales@example.com") || !strings.Contains(out, "sent") {
		t.Errorf("cli show:\n%s", out)
	}
	out = p.cli(t, true, "status")
	if !regexp.MustCompile(`status\s+ok`).MatchString(out) || !regexp.MustCompile(`dead\s+0`).MatchString(out) {
		t.Errorf("cli status:\n%s", out)
	}
	out = p.cli(t, true, "status", "--json")
	if !json.Valid([]byte(out)) || !strings.Contains(out, `"status": "ok"`) {
		t.Errorf("cli status --json:\n%s", out)
	}

	// Errors: unknown ids 404, malformed ids and filters 400, wrong methods 405.
	unknown := uuid.Must(uuid.NewV7()).String()
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/form_outbox/submissions/" + unknown, 404},
		{"DELETE", "/form_outbox/submissions/" + unknown, 404},
		{"POST", "/form_outbox/submissions/" + unknown + "/release", 404},
		{"GET", "/form_outbox/deliveries/" + unknown, 404},
		{"POST", "/form_outbox/deliveries/" + unknown + "/retry", 404},
		{"GET", "/form_outbox/nope", 404},
		{"GET", "/form_outbox/submissions/not-a-uuid", 400},
		{"GET", "/form_outbox/submissions?status=lost", 400},
		{"GET", "/form_outbox/submissions?since=yesterday", 400},
		{"GET", "/form_outbox/submissions?limit=0", 400},
		{"GET", "/form_outbox/submissions?cursor=zzz", 400},
		{"GET", "/form_outbox/submissions?frm=contact", 400},
		{"GET", "/form_outbox/deliveries?status=lost", 400},
		{"GET", "/form_outbox/export?format=xml", 400},
		{"POST", "/form_outbox/health", 405},
		{"PUT", "/form_outbox/submissions", 405},
		{"GET", "/form_outbox/deliveries/" + unknown + "/retry", 405},
		{"POST", "/form_outbox/submissions/" + unknown, 405},
	} {
		code, body := p.admin(t, c.method, c.path)
		if code != c.want {
			t.Errorf("%s %s = %d %s, want %d", c.method, c.path, code, body, c.want)
		}
		if !strings.Contains(body, `"error"`) {
			t.Errorf("%s %s: body %q is not a JSON error", c.method, c.path, body)
		}
	}
	p.cli(t, false, "retry", unknown)

	// Erasure: the row and its deliveries go; an event records it.
	out = p.cli(t, true, "delete", sent)
	if strings.TrimSpace(out) != sent+" erased" {
		t.Errorf("cli delete printed %q", out)
	}
	p.adminJSON(t, http.MethodGet, "/form_outbox/submissions/"+sent, 404, nil)
	db := openSQLite(t, filepath.Join(dir, "forms.db"))
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM deliveries WHERE submission_id = ?`, sent).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d deliveries of the erased submission remain (err %v)", n, err)
	}
	var data string
	if err := db.QueryRow(`SELECT data FROM events WHERE kind = 'submission.erased' AND submission_id = ?`, sent).Scan(&data); err != nil || data != `{"form":"contact"}` {
		t.Errorf("erasure event data = %q (err %v), want only the form", data, err)
	}

	// Export as CSV and NDJSON through the API and the CLI.
	code, body := p.admin(t, http.MethodGet, "/form_outbox/export?format=csv&form=contact")
	rows := strings.Split(strings.TrimSpace(body), "\n")
	if code != 200 || len(rows) != 2 || rows[0] != "id,created_at,form,status,reason,test,origin,referer,user_agent,data,files" || !strings.HasPrefix(rows[1], quarantined+",") {
		t.Errorf("csv export = %d\n%s", code, body)
	}
	out = p.cli(t, true, "export", "--form", "hook")
	var line struct{ ID, Form string }
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &line); err != nil || line.ID != hookSub || line.Form != "hook" {
		t.Errorf("cli export --form hook = %q (err %v)", out, err)
	}
}

// TestAdminExportStreamsTenThousandSubmissions fills the store behind Caddy with 10,000
// submissions of 4 KiB each and exports them: every row arrives, and the process's peak
// memory grows by far less than the export's size, which whole-table buffering could not do.
func TestAdminExportStreamsTenThousandSubmissions(t *testing.T) {
	t.Parallel()
	hook := newSwitchable(t, http.StatusOK)
	dir := t.TempDir()
	p := newCaddy(t, caddyOpts{Dir: dir, Caddyfile: adminConfig("sqlite {{DIR}}/forms.db", hook.srv.URL)})
	postAdminForm(t, p, "/contact", url.Values{"name": {"first"}}) // the schema exists

	const rows = 10000
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "forms.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	// 16 KiB a row makes a 160 MB export: far beyond what a streamed export holds at
	// once (a batch of rows, buffers, SQLite's page cache, GC slack: some tens of MB),
	// and far below what a buffered one would need, so the bound below separates the two
	// even on a busy machine.
	big := strings.Repeat("x", 16<<10)
	base := time.Now().Add(-time.Hour).UnixMicro()
	stmt, err := tx.Prepare(`INSERT INTO submissions (id, form, status, reason, data, meta, content_hash, test, created_at)
		VALUES (?, 'bulk', 'accepted', '', ?, '{}', '', 0, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		d, _ := json.Marshal(map[string]string{"n": strconv.Itoa(i), "message": big})
		if _, err := stmt.Exec(uuid.Must(uuid.NewV7()).String(), string(d), base+int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	before := procStatusKB(t, p, "VmHWM")
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/form_outbox/export?form=bulk", p.AdminPort), nil)
	// 160 MB through one response: what is checked is memory, not speed, so the whole
	// stream gets minutes (the shared client's 30 s ran out on a loaded machine).
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	got, total := 0, 0
	for sc.Scan() {
		total += len(sc.Bytes())
		if !bytes.Contains(sc.Bytes(), []byte(`"form":"bulk"`)) {
			t.Fatalf("line %d is not a bulk submission: %.100s", got, sc.Text())
		}
		got++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || got != rows {
		t.Fatalf("export = %d with %d lines, want 200 and %d", resp.StatusCode, got, rows)
	}
	growthMB := float64(procStatusKB(t, p, "VmHWM")-before) / 1024
	t.Logf("exported %.1f MB; peak RSS grew %.1f MB", float64(total)/(1<<20), growthMB)
	if limit := float64(total) / (1 << 20) / 4; growthMB > limit {
		t.Errorf("peak RSS grew %.1f MB exporting %.1f MB: the export is not streamed", growthMB, float64(total)/(1<<20))
	}
}

func procStatusKB(t *testing.T, p *caddyProc, field string) int {
	t.Helper()
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(field + `:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in /proc/%d/status", field, pid)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// TestAdminHealthFollowsPostgres stops and restarts a PostgreSQL cluster of the test's own
// under a running Caddy: health answers 503 while it is down and 200 once it is back.
func TestAdminHealthFollowsPostgres(t *testing.T) {
	t.Parallel()
	pg := newPGCluster(t)
	hook := newSwitchable(t, http.StatusOK)
	p := newCaddy(t, caddyOpts{Caddyfile: adminConfig("postgres "+pg.DSN(), hook.srv.URL)})
	health := func() (int, string) { return p.admin(t, http.MethodGet, "/form_outbox/health") }
	if code, body := health(); code != 200 {
		t.Fatalf("health with PostgreSQL up = %d %s", code, body)
	}
	pg.Stop()
	var body string
	if err := waitFor(20*time.Second, func() bool { var c int; c, body = health(); return c == 503 }); err != nil {
		t.Fatalf("health never turned 503 with PostgreSQL down; last: %s", body)
	}
	if !strings.Contains(body, "storage unreachable") || !strings.Contains(body, `"reachable": false`) {
		t.Errorf("503 body does not say why: %s", body)
	}
	out := p.cli(t, false, "status")
	if !strings.Contains(out, "UNREACHABLE") {
		t.Errorf("cli status with PostgreSQL down:\n%s", out)
	}
	pg.Start()
	if err := waitFor(30*time.Second, func() bool { var c int; c, body = health(); return c == 200 }); err != nil {
		t.Fatalf("health never came back to 200; last: %s", body)
	}
}
