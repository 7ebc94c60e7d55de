package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/formoutbox/caddy-form-outbox/internal/browsertest"
)

// destinationsInboxCaddyfile is an inbox beside a hook form whose webhook the test makes
// answer 410, so that it parks.
const destinationsInboxCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		worker {
			concurrency 1
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
	form_outbox /hook {
		form hook
		field n required
		notify webhook {{HOOK}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
	respond "static site"
}
`

// TestInboxDestinationsInBrowser: a webhook that answers 410 parks; the operator sees it
// on the inbox's Destinations page in Chromium (what it is, why, the three leads held),
// fixes the receiver and presses Unpark: the leads are sent, in order, and the page says
// nothing is parked. With FORM_OUTBOX_SCREENSHOTS set it refreshes
// docs/images/inbox-destinations-desktop-{light,dark}.png.
func TestInboxDestinationsInBrowser(t *testing.T) {
	t.Parallel()
	hash := inboxPasswordHash(t)
	hook := newOrderedReceiver(t, http.StatusGone)
	p := newCaddy(t, caddyOpts{Caddyfile: strings.NewReplacer("{{HOOK}}", hook.srv.URL+"/in/s3cret-path-token",
		"{{HASH}}", hash).Replace(destinationsInboxCaddyfile)})
	waitUp(t, p)
	for i := range 3 {
		postAdminForm(t, p, "/hook", url.Values{"n": {fmt.Sprintf("%02d", i)}})
	}
	var list parkedDestinationsJSON
	if err := waitFor(30*time.Second, func() bool {
		p.adminJSON(t, http.MethodGet, "/form_outbox/destinations", 200, &list)
		return len(list.Destinations) == 1 && list.Destinations[0].Held == 3
	}); err != nil {
		t.Fatalf("the webhook never held 3 leads: %+v\n%s", list, tail(p.Log(), 3000))
	}
	key := list.Destinations[0].Key

	b := newOperatorBrowser(t, p)
	ctx, text, open := b.ctx, b.text, b.open

	// The navigation leads to the page; the row says what is parked and why.
	open("/inbox/")
	b.click(`nav a[href$="/destinations"]`)
	row := text(`#parked tr[data-key="` + key + `"]`)
	for _, want := range []string{"webhook 127.0.0.1", key, "permanent gone (HTTP 410)", "3 deliveries of 3 leads"} {
		if !strings.Contains(row, want) {
			t.Errorf("the parked row %q lacks %q", row, want)
		}
	}
	if page := text("main"); strings.Contains(page, "s3cret") {
		t.Errorf("the page shows the webhook URL's secret path:\n%s", page)
	}
	takeDestinationScreenshots(t, ctx, p)

	// Fixed; Unpark sends the held leads, in order.
	hook.status.Store(http.StatusOK)
	b.click(`#parked tr[data-key="` + key + `"] button`)
	if got := text(".flash"); !strings.Contains(got, "unparked") {
		t.Errorf("flash after unpark = %q", got)
	}
	if got := text("main .card"); !strings.Contains(got, "No destination is parked") {
		t.Errorf("after unpark the page shows %q", got)
	}
	if err := waitFor(30*time.Second, func() bool { return len(hook.received()) == 3 }); err != nil {
		t.Fatalf("the receiver got %v after unpark, want the 3 leads", hook.received())
	}
	if got := strings.Join(hook.received(), ","); got != "00,01,02" {
		t.Errorf("the receiver got %s, want 00,01,02", got)
	}
}

// takeDestinationScreenshots saves the Destinations page at desktop width, light and
// dark; into docs/images only when FORM_OUTBOX_SCREENSHOTS is set.
func takeDestinationScreenshots(t *testing.T, ctx context.Context, p *caddyProc) {
	t.Helper()
	dir := t.TempDir()
	if os.Getenv(envScreenshots) != "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "docs", "images")
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 720)); err != nil {
		t.Fatal(err)
	}
	for _, scheme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatalf("emulate %s: %v", scheme, err)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(p.URL("/inbox/destinations")), chromedp.WaitReady(chromedp.CSS("footer"))); err != nil {
			t.Fatal(err)
		}
		browsertest.Screenshot(t, ctx, filepath.Join(dir, "inbox-destinations-desktop-"+scheme+".png"))
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}
}
