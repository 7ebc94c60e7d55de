package e2e

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/formoutbox/caddy-form-outbox/internal/browsertest"
)

const inboxAlertsCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: the banner here is about a dead delivery; e2e/park_test.go checks parking.
		park off
		storage sqlite {{DIR}}/forms.db
		inbox_url http://127.0.0.1:{{HTTP}}/inbox
		retry {
			webhook_attempts 1
		}
		alerts {
			email owner@example.com
			interval 200ms
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
	form_outbox /contact {
		form contact
		notify webhook {{HOOK}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
		notify email sales@example.com
	}
	respond "static site"
}
`

// TestInboxAlertsBannerInBrowser: two leads whose webhook answers 410 go dead; the
// inbox, in Chromium, shows the open alert as a banner on its pages, and its link leads
// to the form's dead deliveries. Screenshots (light and dark) go to docs/images with
// FORM_OUTBOX_SCREENSHOTS=1.
func TestInboxAlertsBannerInBrowser(t *testing.T) {
	t.Parallel()
	hash := inboxPasswordHash(t)
	hook := newSwitchable(t, http.StatusGone)
	p := newCaddy(t, caddyOpts{Caddyfile: strings.NewReplacer("{{HOOK}}", hook.srv.URL,
		"{{HASH}}", hash).Replace(inboxAlertsCaddyfile)})
	waitUp(t, p)
	// The only target is e-mail, and the form sends e-mail too: an alert about e-mail
	// failures would reach nobody, and the log says so at start.
	if log := p.Log(); !strings.Contains(log, "no alert target is independent of this channel") || !strings.Contains(log, `"channel":"email"`) {
		t.Errorf("no load-time warning about e-mail alerts without an independent target:\n%s", log)
	}
	postLead(t, p, "the first lead")
	postLead(t, p, "the second lead")
	if err := waitFor(20*time.Second, func() bool {
		l := alertsList(t, p)
		return len(l.Open) == 1 && l.Open[0].Affected == 2
	}); err != nil {
		t.Fatalf("no alert for two dead leads: %+v\n%s", alertsList(t, p), p.Log())
	}

	ctx := browsertest.New(t, browsertest.Options{Timeout: 2 * time.Minute})
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:"+inboxPassword))
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
		t.Fatalf("set credentials: %v", err)
	}
	open := func(path string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(p.URL(path)), chromedp.WaitReady(chromedp.CSS("footer"))); err != nil {
			t.Fatalf("open %s: %v", path, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return s
	}
	for _, path := range []string{"/inbox/", "/inbox/submissions"} {
		open(path)
		banner := text(".alerts")
		for _, want := range []string{"1 open alert", "delivery_dead", "route webhook of form contact (webhook) gave up on 2 submissions", "2 leads affected"} {
			if !strings.Contains(banner, want) {
				t.Errorf("%s: the banner says no %q: %q", path, want, banner)
			}
		}
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(".alerts a"))); err != nil {
		t.Fatalf("follow the banner's link: %v", err)
	}
	if rows := text(".rows"); strings.Count(rows, "contact") != 2 {
		t.Errorf("the banner's link lists %q, want the two dead contact leads", rows)
	}

	dir := t.TempDir()
	if os.Getenv(envScreenshots) != "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "docs", "images")
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatal(err)
	}
	for _, scheme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatalf("emulate %s: %v", scheme, err)
		}
		open("/inbox/")
		browsertest.Screenshot(t, ctx, filepath.Join(dir, fmt.Sprintf("inbox-alerts-desktop-%s.png", scheme)))
	}
}
