package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/formoutbox/caddy-form-outbox/internal/browsertest"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

const inboxCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: dead webhooks are what the inbox shows here; e2e/park_test.go checks parking.
		park off
		storage {{STORAGE}}
		inbox_url http://127.0.0.1:{{HTTP}}/inbox
		worker {
			poll_interval 1s
		}
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	basic_auth /inbox* {
		ops {{HASH}}
	}
	form_outbox_inbox /inbox* {
		title "Example Ltd — forms"
	}
	form_outbox_inbox /open* {
	}
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

const inboxPassword = "correct horse battery staple"

// inboxPasswordHash is inboxPassword hashed by the built Caddy, for a Caddyfile's
// basic_auth in front of the inbox.
func inboxPasswordHash(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(caddyBin, "hash-password", "--plaintext", inboxPassword).Output()
	if err != nil {
		t.Fatalf("caddy hash-password: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestInboxInBrowser drives the operator's inbox in Debian's Chromium against a built
// Caddy, on SQLite and on PostgreSQL.
func TestInboxInBrowser(t *testing.T) {
	t.Parallel()
	hash := inboxPasswordHash(t)
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			storage := "sqlite {{DIR}}/forms.db"
			if store == "postgres" {
				pc := storetest.NewPostgresSchemaName(t)
				storage = fmt.Sprintf("postgres %q {\n\t\t\tschema %s\n\t\t}", pc.DSN, pc.Schema)
			}
			testInbox(t, storage, hash, store == "sqlite")
		})
	}
}

func testInbox(t *testing.T, storage, hash string, screenshots bool) {
	hook := newSwitchable(t, http.StatusGone)
	p := newCaddy(t, caddyOpts{Caddyfile: strings.NewReplacer("{{STORAGE}}", storage, "{{HOOK}}", hook.srv.URL,
		"{{HASH}}", hash).Replace(inboxCaddyfile)})
	waitUp(t, p)

	// Fails closed: 401 without credentials, 403 without an authentication handler.
	resp, body := do(t, inboxReq(t, "GET", p.URL("/inbox/"), nil))
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d %s, want 401", resp.StatusCode, body)
	}
	resp, body = do(t, inboxReq(t, "GET", p.URL("/open/"), nil))
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Protect its paths with basic_auth") {
		t.Fatalf("no auth handler: %d %s, want 403 saying how to protect it", resp.StatusCode, body)
	}

	// The data: a lead with markup in a field, a quarantined one, three dead webhooks.
	xss := postAdminForm(t, p, "/contact", url.Values{"name": {"Ada Lovelace"}, "message": {"<img src=x onerror=alert(1)>"}})
	held := postQuarantined(t, p)
	var dead []string
	for i := range 3 {
		dead = append(dead, postAdminForm(t, p, "/hook", url.Values{"n": {fmt.Sprint(i)}}))
	}
	for _, id := range dead {
		p.waitDelivery(t, id, "dead")
	}
	p.waitDelivery(t, xss, "sent")
	hook.status.Store(http.StatusOK)
	if !mailLinks(t, filepath.Join(p.dir, "mail"), p.URL("/inbox/submissions/"+xss)) {
		t.Errorf("no notification email links to %s", p.URL("/inbox/submissions/"+xss))
	}

	b := newOperatorBrowser(t, p)
	ctx, auth, text, click, open := b.ctx, b.auth, b.text, b.click, b.open
	// waitStatus reloads the submission page until its first delivery shows want.
	waitStatus := func(id, want string) {
		t.Helper()
		var got string
		err := waitFor(20*time.Second, func() bool {
			open("/inbox/submissions/" + id)
			got = text("[data-delivery-status]")
			return got == want
		})
		if err != nil {
			t.Fatalf("delivery of %s shows %q, want %q", id, got, want)
		}
	}

	// Log in and find the lead by search, then open it: the markup is text.
	open("/inbox/")
	if got := text(".user strong"); got != "ops" {
		t.Fatalf("signed in as %q", got)
	}
	open("/inbox/submissions")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#q"), "lovelace")); err != nil {
		t.Fatalf("type the search: %v", err)
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Submit(chromedp.CSS("#q"))); err != nil {
		t.Fatalf("search: %v", err)
	}
	if rows := text(".rows"); !strings.Contains(rows, "Ada Lovelace") || strings.Count(rows, "contact") != 1 {
		t.Fatalf("search results: %q", rows)
	}
	click(".rows a")
	if got := text(".fields"); !strings.Contains(got, "<img src=x onerror=alert(1)>") {
		t.Fatalf("field value not shown as text: %q", got)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main img").length`))
	if err != nil || n != 0 {
		t.Fatalf("visitor markup became %d elements (%v)", n, err)
	}

	// Retry one dead delivery and see it sent; the history names the user.
	open("/inbox/submissions/" + dead[0])
	click("button.retry")
	if got := text(".flash"); !strings.Contains(got, "queued") {
		t.Errorf("flash after retry = %q", got)
	}
	waitStatus(dead[0], "sent")
	if got := text(".events"); !strings.Contains(got, "delivery.retried by ops") {
		t.Errorf("history = %q, want the retry by ops", got)
	}

	// Bulk retry the other dead ones through the dead filter.
	open("/inbox/submissions?delivery=dead")
	if rows := text(".rows"); strings.Count(rows, "hook") != 2 {
		t.Fatalf("dead filter shows %q, want the 2 still dead", rows)
	}
	click("button.warn")
	if got := text(".flash"); got != "2 dead deliveries are queued again." {
		t.Errorf("flash after bulk retry = %q", got)
	}
	waitStatus(dead[1], "sent")
	waitStatus(dead[2], "sent")

	// Release the quarantined one and see its delivery sent.
	open("/inbox/submissions/" + held)
	if got := text("#status"); got != "quarantined" {
		t.Fatalf("held status = %q", got)
	}
	if got := text("#violations"); got != "name is required" {
		t.Errorf("held submission's failed fields = %q, want the missing name", got)
	}
	click("#release")
	waitStatus(held, "sent")

	// Mark the lead as spam.
	open("/inbox/submissions/" + xss)
	click("#spam")
	if got := text("#status"); got != "spam" {
		t.Errorf("status after mark spam = %q", got)
	}

	if screenshots {
		takeInboxScreenshots(t, ctx, p, xss)
	}

	// Erase one, through its confirmation page.
	open("/inbox/submissions/" + dead[2])
	click("#erase")
	click("#confirm-erase")
	if got := text(".flash"); !strings.Contains(got, "erased") {
		t.Errorf("flash after erase = %q", got)
	}
	if code, _ := p.admin(t, "GET", "/form_outbox/submissions/"+dead[2]); code != http.StatusNotFound {
		t.Errorf("erased submission: admin answers %d, want 404", code)
	}

	// Export the hook form as CSV, and a cross-origin POST with valid credentials is
	// refused and changes nothing (plain HTTP: a browser would not even send the token).
	cookie, token := inboxSession(t, p, auth)
	post := func(path, origin string, form url.Values) (*http.Response, string) {
		form.Set("csrf_token", token)
		req := inboxReq(t, "POST", p.URL(path), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", auth)
		req.Header.Set("Origin", origin)
		req.AddCookie(cookie)
		return do(t, req)
	}
	resp, body = post("/inbox/export", "http://"+resp.Request.URL.Host, url.Values{"form": {"hook"}, "format": {"csv"}})
	if resp.StatusCode != http.StatusOK || strings.Count(body, "\n") != 3 || !strings.Contains(body, dead[0]) {
		t.Errorf("export: %d %q, want a header and the 2 hook rows left", resp.StatusCode, body)
	}
	resp, body = post("/inbox/submissions/"+dead[0]+"/spam", "http://evil.example", url.Values{})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST: %d %s, want 403", resp.StatusCode, body)
	}
	var sub submissionJSON
	p.adminJSON(t, "GET", "/form_outbox/submissions/"+dead[0], 200, &sub)
	if sub.Status != "accepted" {
		t.Errorf("after the refused POST the submission is %s, want accepted", sub.Status)
	}
}

func inboxReq(t *testing.T, method, u string, body *strings.Reader) *http.Request {
	t.Helper()
	var req *http.Request
	var err error
	if body == nil {
		req, err = http.NewRequest(method, u, nil)
	} else {
		req, err = http.NewRequest(method, u, body)
	}
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// mailLinks reports whether an .eml file in dir holds link (quoted-printable soft line
// breaks undone).
func mailLinks(t *testing.T, dir, link string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.NewReplacer("=\r\n", "", "=\n", "", "=3D", "=").Replace(string(b)), link) {
			return true
		}
	}
	return false
}

// waitUp waits until Caddy answers on its HTTP port.
func waitUp(t *testing.T, p *caddyProc) {
	t.Helper()
	if err := waitFor(20*time.Second, func() bool {
		resp, err := http.Get(p.URL("/"))
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}); err != nil {
		t.Fatalf("caddy did not come up:\n%s", p.Log())
	}
}

// postQuarantined posts a contact form without its required name: stored quarantined.
func postQuarantined(t *testing.T, p *caddyProc) string {
	t.Helper()
	req := inboxReq(t, "POST", p.URL("/contact"), strings.NewReader(url.Values{"message": {"no name"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	_, body := do(t, req)
	id := regexp.MustCompile(`"id":\s*"([0-9a-f-]{36})"`).FindStringSubmatch(body)
	if id == nil {
		t.Fatalf("quarantined post answered %s, want an id", body)
	}
	return id[1]
}

// inboxSession reads the session cookie and token an inbox page hands out.
func inboxSession(t *testing.T, p *caddyProc, auth string) (*http.Cookie, string) {
	t.Helper()
	req := inboxReq(t, "GET", p.URL("/inbox/submissions"), nil)
	req.Header.Set("Authorization", auth)
	resp, body := do(t, req)
	tok := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(body)
	if len(resp.Cookies()) == 0 || tok == nil {
		t.Fatalf("no session from the inbox: %d %v", resp.StatusCode, resp.Header)
	}
	return resp.Cookies()[0], tok[1]
}

// screenshotDir is where screenshots go. The pictures in docs/images are refreshed only
// when asked for (envScreenshots), so a test run never rewrites tracked files; otherwise
// they go to a temporary directory (the same code path, so a page that cannot be
// captured still fails the test).
func screenshotDir(t *testing.T) string {
	t.Helper()
	if os.Getenv(envScreenshots) == "" {
		return t.TempDir()
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "docs", "images")
}

// envScreenshots, when set, makes TestInboxInBrowser write its screenshots into
// docs/images (FORM_OUTBOX_SCREENSHOTS=1 go test ./e2e/ -run TestInboxInBrowser/sqlite).
const envScreenshots = "FORM_OUTBOX_SCREENSHOTS"

// takeInboxScreenshots saves the list and a submission at desktop and phone widths, light
// and dark, for the README.
func takeInboxScreenshots(t *testing.T, ctx context.Context, p *caddyProc, id string) {
	t.Helper()
	dir := screenshotDir(t)
	for _, scheme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatalf("emulate %s: %v", scheme, err)
		}
		for _, size := range []struct {
			name string
			w, h int64
		}{{"desktop", 1280, 860}, {"phone", 390, 844}} {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(size.w, size.h)); err != nil {
				t.Fatal(err)
			}
			for page, path := range map[string]string{"list": "/inbox/submissions", "submission": "/inbox/submissions/" + id, "overview": "/inbox/"} {
				if err := chromedp.Do(ctx, chromedp.Navigate(p.URL(path)), chromedp.WaitReady(chromedp.CSS("footer"))); err != nil {
					t.Fatal(err)
				}
				browsertest.Screenshot(t, ctx, filepath.Join(dir, fmt.Sprintf("inbox-%s-%s-%s.png", page, size.name, scheme)))
			}
		}
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
}
