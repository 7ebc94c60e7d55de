package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/formoutbox/caddy-form-outbox/internal/prereq"
)

// altchaVersion is the official widget the tests hold our challenge endpoint to.
const altchaVersion = "3.2.2"

// installAltcha installs the `altcha` npm package into a directory of the test's own
// and returns the widget's self-contained ES module.
func installAltcha(t *testing.T) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		prereq.Missing(t, "npm, to install the official altcha widget")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save", "altcha@"+altchaVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install altcha@%s: %v\n%s", altchaVersion, err, out)
	}
	return filepath.Join(dir, "node_modules", "altcha", "dist", "main", "altcha.js")
}

// altchaPage is a plain HTML form (no form_outbox client) with the official widget
// pointed at the form's challenge endpoint.
const altchaPage = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Contact</title><script type="module" src="/altcha.js"></script></head>
<body>
<form method="post" action="/contact">
	<label for="name">Name</label> <input id="name" name="name" value="Ada Lovelace">
	<label for="email">Email</label> <input id="email" name="email" value="ada@example.com">
	<label for="message">Message</label> <textarea id="message" name="message">Hello {{MARKER}}</textarea>
	<altcha-widget challenge="/contact?form_outbox=altcha"></altcha-widget>
	<button type="submit">Send</button>
</form>
</body>
</html>
`

// The official ALTCHA widget works against our challenge endpoint unchanged: clicked, it
// fetches a challenge, solves it and adds its payload to the form; the plain post is
// stored accepted with the proof of work passed and its challenge recorded as used.
func TestOfficialAltchaWidgetSolvesOurChallenge(t *testing.T) {
	widget := installAltcha(t)
	p, db, ctx, marker := browserTest(t, "altcha {\n\t\t\tmax_number 20000\n\t\t}", true)
	site := filepath.Join(p.dir, "site")
	src, err := os.ReadFile(widget)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, "altcha.js"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, "widget.html"), []byte(strings.ReplaceAll(altchaPage, "{{MARKER}}", marker)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(p.URL("/widget.html"))); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	waitPage(t, ctx, "the widget", `!!document.querySelector("altcha-widget input[type=checkbox]")`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`altcha-widget input[type=checkbox]`))); err != nil {
		t.Fatalf("click the widget: %v", err)
	}
	waitPage(t, ctx, "the widget's solution", `[...document.querySelectorAll("form input[name=altcha]")].some(i => i.value.length > 0)`)
	clickSend(t, ctx)
	waitPage(t, ctx, "the thank-you page", `location.pathname === "/thanks.html"`)

	oneAccepted(t, db, marker)
	got := storedSignals(t, db, submissionsWhere(t, db, marker)[0].ID)
	if w, ok := got["altcha_passed"]; !ok || w != 0 || len(got) != 2 || got["time_trap_missing"] != 1 {
		t.Errorf("signals %v, want altcha_passed 0 and time_trap_missing 1 (a plain form sends no token)", got)
	}
	if n := usedTokens(t, db, "pow:"); n != 1 {
		t.Errorf("%d used challenges recorded, want 1", n)
	}
}

// The built-in client solves the form's proof of work itself (Web Crypto) when the
// token answer says the form wants one, and posts it with the time-trap token.
func TestBrowserClientSolvesTheProofOfWork(t *testing.T) {
	p, db, ctx, marker := browserTest(t, "altcha {\n\t\t\tmax_number 20000\n\t\t\trequired\n\t\t}\n\t\tspam {\n\t\t\ttime_trap 1ms 1h\n\t\t}", true)
	fill(t, ctx, p, marker)
	waitPage(t, ctx, "the solved proof of work", `document.querySelector("form[data-form-outbox]").getAttribute("data-form-outbox-altcha") === "solved"`)
	clickSend(t, ctx)
	waitPage(t, ctx, "the thank-you page", `location.pathname === "/thanks.html"`)
	oneAccepted(t, db, marker)
	got := storedSignals(t, db, submissionsWhere(t, db, marker)[0].ID)
	if w, ok := got["altcha_passed"]; !ok || w != 0 || len(got) != 1 {
		t.Errorf("signals %v, want altcha_passed 0 alone (token in time, work done)", got)
	}
}
