package formoutbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// These tests load real Caddy configs in-process (admin off, loopback port) and post
// forms to them. Caddy keeps one running config per process, so they never run in parallel.

// runCaddy loads cfg (the "apps" object) and stops Caddy when the test ends. Caddy's data
// dir is moved into a temp dir so the defaults (SQLite file, mail dir, ip hash key) land there.
func runCaddy(t *testing.T, apps map[string]any) (dataDir string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_DATA_HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	loadCaddy(t, apps)
	t.Cleanup(func() {
		if err := caddy.Stop(); err != nil {
			t.Errorf("stop caddy: %v", err)
		}
	})
	return filepath.Join(home, "caddy")
}

// loadCaddy loads (or reloads) a config with the admin endpoint off and quiet logs.
func loadCaddy(t *testing.T, apps map[string]any) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{
		"admin":   map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}},
		"storage": map[string]any{"module": "file_system", "root": filepath.Join(os.Getenv("XDG_DATA_HOME"), "certmagic")},
		"apps":    apps,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := caddy.Load(raw, true); err != nil {
		t.Fatalf("load caddy config: %v", err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// httpApp serves the contact form handler at /contact and "page" for everything else.
func httpApp(addr string, handler map[string]any) map[string]any {
	handler["handler"] = "form_outbox"
	return map[string]any{
		"servers": map[string]any{
			"srv0": map[string]any{
				"listen":          []string{addr},
				"automatic_https": map[string]any{"disable": true},
				"routes": []any{
					map[string]any{
						"match":  []any{map[string]any{"path": []string{"/contact"}}},
						"handle": []any{handler},
					},
					map[string]any{
						"handle": []any{map[string]any{"handler": "static_response", "body": "page"}},
					},
				},
			},
		},
	}
}

func contactHandler() map[string]any {
	return map[string]any{
		"fields": []any{
			map[string]any{"name": "name", "required": true},
			map[string]any{"name": "email", "required": true, "email": true},
		},
		"form":     "contact",
		"redirect": "/thanks.html",
		"notify":   []any{map[string]any{"channel": "email", "to": []string{"owner@example.com"}}},
	}
}

// noRedirects lets the test see the 303 itself. Without keep-alives, a post after a
// reload never lands on a connection the old server is closing.
var noRedirects = &http.Client{
	Timeout:       10 * time.Second,
	Transport:     &http.Transport{DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func postContact(t *testing.T, addr string) *http.Response {
	t.Helper()
	form := url.Values{"name": {"Ada"}, "email": {"ada@example.com"}, "message": {"Hello"}}
	key := fmt.Sprintf("post-%d", postSeq.Add(1))
	// A connection accepted in the instant Caddy swaps servers during a reload can be
	// closed unanswered (EOF). A browser's retrying fetch resends with the same
	// idempotency key, so a retry can never store the post twice; do the same.
	var lastErr error
	for try := 0; try < 3; try++ {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/contact", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Idempotency-Key", key)
		resp, err := noRedirects.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		resp.Body.Close()
		return resp
	}
	t.Fatalf("post form: %v", lastErr)
	return nil
}

var postSeq atomic.Int64

// runningApp is the form_outbox App of the running config.
func runningApp(t *testing.T) *App {
	t.Helper()
	v, err := caddy.ActiveContext().App(AppName)
	if err != nil {
		t.Fatalf("form_outbox app: %v", err)
	}
	return v.(*App)
}

// waitFor polls cond until it holds or the deadline passes: the worker delivers
// asynchronously and there is no signal to wait on from outside the process.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func emlFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// onlySubmission returns the one submission the store received.
func onlySubmission(t *testing.T, store outbox.Store) *outbox.Submission {
	t.Helper()
	ctx := context.Background()
	events, err := store.ListEvents(ctx, outbox.EventSubmissionReceived, 10)
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	if len(events) != 1 {
		t.Fatalf("got %d submission.received events, want 1", len(events))
	}
	sub, err := store.GetSubmission(ctx, events[0].SubmissionID)
	if err != nil {
		t.Fatalf("get submission: %v", err)
	}
	return sub
}

func TestInProcessConfiguredAppStoresAndDelivers(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "forms.db")
	mailDir := filepath.Join(dir, "mail")
	addr := freeAddr(t)
	runCaddy(t, map[string]any{
		"form_outbox": map[string]any{
			"storage": map[string]any{"driver": "sqlite", "path": dbPath},
			"email":   map[string]any{"from": "Forms <forms@example.com>", "file": map[string]any{"dir": mailDir}},
		},
		"http": httpApp(addr, contactHandler()),
	})

	resp := postContact(t, addr)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/thanks.html" {
		t.Fatalf("POST /contact: got %d Location %q, want 303 /thanks.html", resp.StatusCode, resp.Header.Get("Location"))
	}

	store := runningApp(t).store
	sub := onlySubmission(t, store)
	if sub.Form != "contact" || sub.Status != outbox.SubmissionAccepted {
		t.Errorf("stored submission form %q status %q, want contact accepted", sub.Form, sub.Status)
	}
	if v, _ := sub.Data.Get("email"); v != "ada@example.com" {
		t.Errorf("stored email field %q, want ada@example.com", v)
	}
	if _, err := os.Stat(dbPath); err != nil {
		t.Errorf("the configured SQLite file: %v", err)
	}

	waitFor(t, "the email's .eml file", func() bool { return len(emlFiles(t, mailDir)) == 1 })
	eml, err := os.ReadFile(emlFiles(t, mailDir)[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"From: \"Forms\" <forms@example.com>", "To: <owner@example.com>", "Reply-To: <ada@example.com>"} {
		if !strings.Contains(string(eml), want) {
			t.Errorf(".eml lacks %q:\n%s", want, eml)
		}
	}
	waitFor(t, "the delivery to be recorded sent", func() bool {
		ds, err := store.ListDeliveries(context.Background(), sub.ID)
		return err == nil && len(ds) == 1 && ds[0].Status == outbox.DeliverySent
	})

	// Other methods reach the next handler, so the form's own path can serve its page.
	get, err := noRedirects.Get("http://" + addr + "/contact")
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Errorf("GET /contact: got %d, want 200 from the next handler", get.StatusCode)
	}
}

// Without a form_outbox app in the config, the handler's ctx.App loads it with defaults,
// and Caddy starts it like a configured app: the email arrives in the default mail dir.
func TestInProcessHandlerAloneProvisionsAndStartsDefaultApp(t *testing.T) {
	addr := freeAddr(t)
	dataDir := runCaddy(t, map[string]any{"http": httpApp(addr, contactHandler())})

	resp := postContact(t, addr)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /contact: got %d, want 303", resp.StatusCode)
	}

	app := runningApp(t)
	wantDB := filepath.Join(dataDir, AppName, "outbox.db")
	if app.storage.Path != wantDB {
		t.Errorf("default SQLite path %q, want %q", app.storage.Path, wantDB)
	}
	sub := onlySubmission(t, app.store)
	if sub.Form != "contact" {
		t.Errorf("form %q, want contact", sub.Form)
	}
	if sub.Meta.ClientIP == "" || strings.Contains(sub.Meta.ClientIP, "127.0.0.1") {
		t.Errorf("stored client IP %q, want a keyed hash of it", sub.Meta.ClientIP)
	}

	mailDir := filepath.Join(dataDir, AppName, "mail")
	waitFor(t, "the email in the default mail dir", func() bool { return len(emlFiles(t, mailDir)) == 1 })

	info, err := os.Stat(filepath.Join(dataDir, AppName, ipHashKeyFile))
	if err != nil {
		t.Fatalf("ip hash key file: %v", err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("ip hash key file mode %v, want 0600", perm)
	}
}

// A reload starts the new config's App before the old one stops; both share one store
// through the pool, and submissions keep being stored across the reload.
func TestInProcessReloadSharesTheStore(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	apps := func(redirect string) map[string]any {
		h := contactHandler()
		h["redirect"] = redirect
		return map[string]any{
			"form_outbox": map[string]any{
				"storage": map[string]any{"driver": "sqlite", "path": filepath.Join(dir, "forms.db")},
				"email":   map[string]any{"file": map[string]any{"dir": filepath.Join(dir, "mail")}},
			},
			"http": httpApp(addr, h),
		}
	}
	runCaddy(t, apps("/one.html"))
	if resp := postContact(t, addr); resp.Header.Get("Location") != "/one.html" {
		t.Fatalf("first config: Location %q", resp.Header.Get("Location"))
	}
	first := runningApp(t).store

	loadCaddy(t, apps("/two.html"))
	if resp := postContact(t, addr); resp.Header.Get("Location") != "/two.html" {
		t.Fatalf("after reload: Location %q", resp.Header.Get("Location"))
	}
	second := runningApp(t).store
	if first != second {
		t.Errorf("the reloaded App opened a second store instead of sharing the first")
	}
	if err := second.Ping(context.Background()); err != nil {
		t.Fatalf("the shared store was closed by the old App's cleanup: %v", err)
	}
	events, err := second.ListEvents(context.Background(), outbox.EventSubmissionReceived, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Errorf("got %d stored submissions across the reload, want 2", len(events))
	}
	waitFor(t, "both emails", func() bool { return len(emlFiles(t, filepath.Join(dir, "mail"))) == 2 })
}

// When the store cannot take a submission and the spool is off, the visitor is told to
// try again (503 with Retry-After) and never sees a success for a post that was not kept.
func TestInProcessStoreFailureAnswers503(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	runCaddy(t, map[string]any{
		"form_outbox": map[string]any{
			"spool":   map[string]any{"mode": "off"},
			"storage": map[string]any{"driver": "sqlite", "path": filepath.Join(dir, "forms.db")},
			"email":   map[string]any{"file": map[string]any{"dir": filepath.Join(dir, "mail")}},
		},
		"http": httpApp(addr, contactHandler()),
	})
	// Close the store under the running App, as a dead database would behave. The App's
	// own cleanup closes it again at the end; the store tolerates that.
	if err := runningApp(t).store.Close(); err != nil {
		t.Fatal(err)
	}
	resp := postContact(t, addr)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("POST with the store down: got %d Retry-After %q, want 503 with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestInProcessOptionsAnswers204(t *testing.T) {
	addr := freeAddr(t)
	runCaddy(t, map[string]any{"http": httpApp(addr, contactHandler())})
	req, err := http.NewRequest(http.MethodOptions, "http://"+addr+"/contact", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("OPTIONS /contact: got %d, want 204", resp.StatusCode)
	}
}

// Two forms may not sign one webhook URL with different secrets: the receiver checks one.
func TestConflictingWebhookSecretsFailTheConfig(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	hook := func(form, secret string) map[string]any {
		return map[string]any{
			"handler": "form_outbox",
			"form":    form,
			"notify":  []any{map[string]any{"channel": "webhook", "url": "https://crm.example.com/hook", "secret": secret}},
		}
	}
	raw, err := json.Marshal(map[string]any{
		"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"apps": map[string]any{"http": map[string]any{"servers": map[string]any{"srv0": map[string]any{
			"listen":          []string{freeAddr(t)},
			"automatic_https": map[string]any{"disable": true},
			"routes": []any{
				map[string]any{"handle": []any{hook("a", "whsec_one")}},
				map[string]any{"handle": []any{hook("b", "whsec_two")}},
			},
		}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var cfg caddy.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	err = caddy.Validate(&cfg)
	if err == nil || !strings.Contains(err.Error(), "two different secrets") {
		t.Fatalf("validate: got %v, want a two-different-secrets error", err)
	}
	if strings.Contains(err.Error(), "whsec_") {
		t.Errorf("the error reveals a secret: %v", err)
	}
}

// The postgres driver with the DSN in an {env.*} placeholder, as the Caddyfile docs show
// it, stores and delivers like SQLite. JSON clients get the submission id.
func TestInProcessPostgresFromEnvPlaceholder(t *testing.T) {
	pg := storetest.NewPostgresSchemaName(t)
	t.Setenv("FORM_OUTBOX_INPROCESS_DSN", pg.DSN)
	dir := t.TempDir()
	addr := freeAddr(t)
	runCaddy(t, map[string]any{
		"form_outbox": map[string]any{
			"storage": map[string]any{"driver": "postgres", "dsn": "{env.FORM_OUTBOX_INPROCESS_DSN}", "schema": pg.Schema},
			"email":   map[string]any{"file": map[string]any{"dir": filepath.Join(dir, "mail")}},
		},
		"http": httpApp(addr, contactHandler()),
	})

	body := `{"name":"Grace","email":"grace@example.com"}`
	resp, err := noRedirects.Post("http://"+addr+"/contact", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		OK     bool   `json:"ok"`
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatalf("decode answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK || !answer.OK || answer.Status != "accepted" {
		t.Fatalf("JSON post: got %d %+v, want 200 ok accepted", resp.StatusCode, answer)
	}
	id, err := uuid.Parse(answer.ID)
	if err != nil {
		t.Fatalf("answer id %q: %v", answer.ID, err)
	}
	store := runningApp(t).store
	sub, err := store.GetSubmission(context.Background(), id)
	if err != nil {
		t.Fatalf("the answered id is not in PostgreSQL: %v", err)
	}
	if v, _ := sub.Data.Get("name"); v != "Grace" {
		t.Errorf("stored name %q, want Grace", v)
	}
	waitFor(t, "the delivery to be sent", func() bool {
		ds, err := store.ListDeliveries(context.Background(), id)
		return err == nil && len(ds) == 1 && ds[0].Status == outbox.DeliverySent
	})
}
