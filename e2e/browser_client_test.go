package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/formoutbox/caddy-form-outbox/internal/browsertest"
)

// browserCaddyfile serves examples/contact-form/site (copied into {{DIR}}/site) with the
// example's form, so these tests drive the page a site owner would copy. {{RATE}} is
// replaced by a rate_limit line or nothing.
const browserCaddyfile = `{
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
	root * {{DIR}}/site
	form_outbox /contact {
		form contact
		field name required max_length 120
		field email required email
		field message required max_length 5000
		honeypot _gotcha
		redirect /thanks.html
		{{RATE}}
		notify email sales@example.com
	}
	file_server
}
`

// browserSite starts Caddy on a copy of the example site and returns it with its database.
func browserSite(t *testing.T, rate string) (*caddyProc, *sql.DB) {
	t.Helper()
	dir := t.TempDir()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "site"), os.DirFS(filepath.Join(root, "examples/contact-form/site"))); err != nil {
		t.Fatalf("copy the example site: %v", err)
	}
	p := newCaddy(t, caddyOpts{Dir: dir, Caddyfile: strings.ReplaceAll(browserCaddyfile, "{{RATE}}", rate)})
	return p, openSQLite(t, filepath.Join(dir, "forms.db"))
}

// browserTest starts the site and a fresh Chromium (with or without JavaScript) and
// returns a marker unique to the test, to find its submissions.
func browserTest(t *testing.T, rate string, js bool) (*caddyProc, *sql.DB, context.Context, string) {
	t.Helper()
	p, db := browserSite(t, rate)
	ctx := browsertest.New(t, browsertest.Options{DisableJavaScript: !js})
	return p, db, ctx, strings.ToLower(t.Name()) + "-" + fmt.Sprint(time.Now().UnixNano())
}

// fill opens the contact page and types a message that carries marker.
func fill(t *testing.T, ctx context.Context, p *caddyProc, marker string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(p.URL("/")),
		chromedp.SendKeys(chromedp.CSS("#name"), "Ada Lovelace"),
		chromedp.SendKeys(chromedp.CSS("#email"), "ada@example.com"),
		chromedp.SendKeys(chromedp.CSS("#message"), "Hello "+marker),
	); err != nil {
		t.Fatalf("fill the form: %v", err)
	}
}

func clickSend(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("button[type=submit]"))); err != nil {
		t.Fatalf("click Send: %v", err)
	}
}

// waitPage polls a JavaScript condition in the page until it is true. Errors count as
// false: the page may be between two documents while the client follows the redirect.
func waitPage(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	err := waitFor(45*time.Second, func() bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		return err == nil && ok
	})
	if err != nil {
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + " | " + document.body.innerText`))
		t.Fatalf("waiting for %s: %v; the page shows %q", what, err, state)
	}
}

// pendingTries is how many times the client has tried the post it keeps (0: none kept).
const pendingTries = `Object.values(JSON.parse(localStorage.getItem("form_outbox:pending") || "{}")).reduce((n, p) => n + p.tries, 0)`

// setOffline turns DevTools network emulation on or off: with it on, every request of
// the page fails as with no network at all, and navigator.onLine is false.
func setOffline(t *testing.T, ctx context.Context, off bool) {
	t.Helper()
	_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
	if err == nil {
		_, err = chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{Offline: off, DownloadThroughput: -1, UploadThroughput: -1}},
		})
	}
	if err == nil {
		_, err = chromedp.Call(ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{
			Offline: off, DownloadThroughput: -1, UploadThroughput: -1,
		})
	}
	if err != nil {
		t.Fatalf("network emulation offline=%v: %v", off, err)
	}
}

// failFormPosts makes every request to the form's path fail as a lost connection while
// the page and the script (?form_outbox=client.js) still load: the Fetch pattern must
// match the whole URL, so "*/contact" leaves the script's URL alone. It returns a func
// that stops it.
func failFormPosts(t *testing.T, ctx context.Context) (stop func()) {
	t.Helper()
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{
		Patterns: []*fetch.RequestPattern{{URLPattern: "*/contact", RequestStage: fetch.RequestStageRequest}},
	}); err != nil {
		t.Fatalf("intercept the form posts: %v", err)
	}
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range paused {
			if err != nil || fctx.Err() != nil {
				return
			}
			_, _ = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{
				RequestID: ev.RequestID, ErrorReason: network.ErrorReasonInternetDisconnected,
			})
		}
	}()
	return func() {
		cancel()
		if _, err := chromedp.Call(ctx, fetch.Disable, cdp.Empty{}); err != nil {
			t.Fatalf("stop intercepting: %v", err)
		}
	}
}

// oneAccepted asserts that exactly one submission carries marker, accepted, with what
// the visitor typed.
func oneAccepted(t *testing.T, db *sql.DB, marker string) {
	t.Helper()
	subs := submissionsWhere(t, db, marker)
	if len(subs) != 1 {
		t.Fatalf("%d submissions carry %q, want exactly 1: %+v", len(subs), marker, subs)
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(subs[0].Data), &data); err != nil {
		t.Fatalf("stored data %q: %v", subs[0].Data, err)
	}
	if subs[0].Status != "accepted" || data["name"] != "Ada Lovelace" || data["email"] != "ada@example.com" || data["message"] != "Hello "+marker {
		t.Errorf("stored submission = %s %s, want accepted with what was typed", subs[0].Status, subs[0].Data)
	}
}

// acceptedWith returns the accepted submissions that carry marker; a refused post
// (quarantined for its field errors or its rate) may be stored beside them.
func acceptedWith(t *testing.T, db *sql.DB, marker string) []storedSubmission {
	t.Helper()
	var out []storedSubmission
	for _, s := range submissionsWhere(t, db, marker) {
		if s.Status == "accepted" {
			out = append(out, s)
		}
	}
	return out
}

func TestBrowserClientOfflineAtSubmit(t *testing.T) {
	t.Parallel()
	p, db, ctx, marker := browserTest(t, "", true)
	fill(t, ctx, p, marker)
	setOffline(t, ctx, true)
	clickSend(t, ctx)
	// A few seconds offline: the client has failed at least twice and says it keeps the message.
	waitPage(t, ctx, "two failed tries", pendingTries+" >= 2")
	waitPage(t, ctx, "the retrying state", `document.querySelector("form").dataset.formOutboxState === "retrying" &&
		document.querySelector("[data-form-outbox-status]").textContent.includes("kept")`)
	if n := len(submissionsWhere(t, db, marker)); n != 0 {
		t.Fatalf("%d submissions stored while the browser was offline", n)
	}
	setOffline(t, ctx, false)
	waitPage(t, ctx, "the thank-you page", `location.pathname === "/thanks.html"`)
	oneAccepted(t, db, marker)
}

func TestBrowserClientReloadWhileOffline(t *testing.T) {
	t.Parallel()
	p, db, ctx, marker := browserTest(t, "", true)
	fill(t, ctx, p, marker)
	stop := failFormPosts(t, ctx)
	clickSend(t, ctx)
	waitPage(t, ctx, "a failed try", pendingTries+" >= 1")

	// The visitor comes back to the page (a new navigation, so Chromium's own form
	// restoration plays no part): the client puts the draft back, honeypot excluded.
	if err := chromedp.Do(ctx, chromedp.Navigate(p.URL("/"))); err != nil {
		t.Fatalf("load the page again: %v", err)
	}
	waitPage(t, ctx, "the restored draft", `document.querySelector("#message").value === "Hello `+marker+`" &&
		document.querySelector("#name").value === "Ada Lovelace" && document.querySelector("#email").value === "ada@example.com"`)
	draft, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Object.keys(localStorage).filter(k => k.includes("draft:")).map(k => localStorage.getItem(k)).join()`))
	if err != nil || strings.Contains(draft, "_gotcha") || !strings.Contains(draft, marker) {
		t.Errorf("stored draft = %q (err %v), want the typed fields and no honeypot", draft, err)
	}
	waitPage(t, ctx, "a failed try after the reload", pendingTries+" >= 2")
	if n := len(submissionsWhere(t, db, marker)); n != 0 {
		t.Fatalf("%d submissions stored while the posts failed", n)
	}
	stop()
	waitPage(t, ctx, "the thank-you page", `location.pathname === "/thanks.html"`)
	oneAccepted(t, db, marker)
	left, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`Object.keys(localStorage).join()`))
	if strings.Contains(left, "draft:") {
		t.Errorf("after success localStorage still holds a draft: %q", left)
	}
}

// The in-flight window is made deterministic by holding the post's answer in DevTools
// (Fetch at the Response stage): the post reached Caddy and was committed, Caddy is then
// killed with SIGKILL and the held answer fails as a dropped connection, so the browser
// never learns the outcome. After the restart the client's retry, with the same key,
// must not make a second submission.
func TestBrowserClientCaddyKilledWhilePostInFlight(t *testing.T) {
	t.Parallel()
	p, db, ctx, marker := browserTest(t, "", true)
	fill(t, ctx, p, marker)
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{
		Patterns: []*fetch.RequestPattern{{URLPattern: "*/contact", RequestStage: fetch.RequestStageResponse}},
	}); err != nil {
		t.Fatalf("hold the answers: %v", err)
	}
	clickSend(t, ctx)
	for ev, err := range paused {
		if err != nil {
			t.Fatalf("waiting for the post: %v", err)
		}
		if ev.Request.Method != http.MethodPost {
			continue
		}
		p.Kill()
		if n := len(submissionsWhere(t, db, marker)); n != 1 {
			t.Fatalf("%d submissions stored before the kill, want the in-flight one", n)
		}
		if _, err := chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{
			RequestID: ev.RequestID, ErrorReason: network.ErrorReasonConnectionReset,
		}); err != nil {
			t.Fatalf("drop the answer: %v", err)
		}
		break
	}
	if _, err := chromedp.Call(ctx, fetch.Disable, cdp.Empty{}); err != nil {
		t.Fatalf("stop holding answers: %v", err)
	}
	waitPage(t, ctx, "a failed try", pendingTries+" >= 1")
	p.Restart()
	waitPage(t, ctx, "the thank-you page", `location.pathname === "/thanks.html"`)
	oneAccepted(t, db, marker)
}

func TestBrowserClientFieldErrorsThenCorrected(t *testing.T) {
	t.Parallel()
	p, db, ctx, marker := browserTest(t, "", true)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(p.URL("/")),
		// Let the empty message through the browser's own check, so the server's 422 answers.
		chromedp.SetAttributeValue(chromedp.CSS("form"), "novalidate", ""),
		chromedp.SendKeys(chromedp.CSS("#name"), "Ada Lovelace"),
		chromedp.SendKeys(chromedp.CSS("#email"), "ada@example.com"),
		chromedp.SendKeys(chromedp.CSS("#name"), " "+marker),
	); err != nil {
		t.Fatalf("fill the form: %v", err)
	}
	clickSend(t, ctx)
	waitPage(t, ctx, "the field error", `document.querySelector("#message").getAttribute("aria-invalid") === "true"`)
	msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const m = document.querySelector("#message");
		const e = document.getElementById(m.getAttribute("aria-describedby")); return e && e.previousElementSibling === m ? e.textContent : "" })()`))
	if err != nil || msg == "" {
		t.Fatalf("no message next to the message field (%q, %v)", msg, err)
	}
	name, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#name")))
	if name != "Ada Lovelace "+marker {
		t.Errorf("after the 422 the name field holds %q, want what was typed", name)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#message"), "Hello "+marker)); err != nil {
		t.Fatal(err)
	}
	clickSend(t, ctx)
	waitPage(t, ctx, "the thank-you page", `location.pathname === "/thanks.html"`)
	if acc := acceptedWith(t, db, marker); len(acc) != 1 || !strings.Contains(acc[0].Data, "Hello "+marker) {
		t.Errorf("accepted submissions %+v, want the corrected one only (all: %+v)", acc, submissionsWhere(t, db, marker))
	}
}

func TestBrowserClientWaitsOutTheRateLimit(t *testing.T) {
	t.Parallel()
	p, db, ctx, marker := browserTest(t, "rate_limit 1 4s", true)
	fill(t, ctx, p, marker)
	// Use up this address's one post per window, as an earlier message would have.
	if resp, body := postForm(t, p, url.Values{"name": {"X"}, "email": {"x@example.com"}, "message": {"first"}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first post: %d %s", resp.StatusCode, body)
	}
	clickSend(t, ctx)
	waitPage(t, ctx, "the wait notice", `document.querySelector("form").dataset.formOutboxState === "waiting" &&
		/in \d+ seconds/.test(document.querySelector("[data-form-outbox-status]").textContent)`)
	waitPage(t, ctx, "the thank-you page", `location.pathname === "/thanks.html"`)
	if acc := acceptedWith(t, db, marker); len(acc) != 1 {
		t.Errorf("%d accepted submissions after the wait, want 1 (all: %+v)", len(acc), submissionsWhere(t, db, marker))
	}
}

func TestBrowserClientWithoutJavaScriptPlainPostWorks(t *testing.T) {
	t.Parallel()
	p, db, ctx, marker := browserTest(t, "", false)
	fill(t, ctx, p, marker)
	clickSend(t, ctx)
	err := waitFor(30*time.Second, func() bool {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		return err == nil && strings.HasSuffix(loc, "/thanks.html")
	})
	if err != nil {
		t.Fatalf("the plain post did not reach the thank-you page: %v", err)
	}
	oneAccepted(t, db, marker)
}
