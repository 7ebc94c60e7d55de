package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/formoutbox/caddy-form-outbox/internal/browsertest"
)

// canaryInboxCaddyfile is canaryCaddyfile with the inbox behind basic_auth.
const canaryInboxCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		inbox_url http://127.0.0.1:{{HTTP}}/inbox
		retry {
			webhook_attempts 1
		}
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
		canary every 6h
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
		field name required
		notify email sales@example.com
		notify webhook {{GOOD}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
		notify webhook {{BAD}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
	respond "static site"
}
`

// TestCanaryInInboxBrowser: the inbox overview in Chromium shows each route's last
// canary (the global `canary every 6h`), the failed one with its error, light and dark:
// the webhook answering 410 parks its destination, and the canary fails at once;
// FORM_OUTBOX_SCREENSHOTS=1 writes the pictures to docs/images.
func TestCanaryInInboxBrowser(t *testing.T) {
	t.Parallel()
	hash := inboxPasswordHash(t)
	good, bad := newHookRecorder(t, http.StatusOK), newHookRecorder(t, http.StatusGone)
	p := newCaddy(t, caddyOpts{Caddyfile: strings.NewReplacer("{{HASH}}", hash,
		"{{GOOD}}", good.srv.URL, "{{BAD}}", bad.srv.URL).Replace(canaryInboxCaddyfile)})
	waitUp(t, p)
	if err := waitFor(60*time.Second, func() bool {
		var h canaryHealth
		code, body := p.admin(t, http.MethodGet, "/form_outbox/health")
		return code == http.StatusOK && json.Unmarshal([]byte(body), &h) == nil && len(h.Canary) == 3
	}); err != nil {
		t.Fatalf("no canary verdicts for the 3 routes: %v\n%s", err, p.Log())
	}

	ctx, dir := newOperatorBrowser(t, p).ctx, screenshotDir(t)
	for _, scheme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatalf("emulate %s: %v", scheme, err)
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860), chromedp.Navigate(p.URL("/inbox/")),
			chromedp.WaitReady(chromedp.CSS("#canary"))); err != nil {
			t.Fatalf("open the overview: %v", err)
		}
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll("#canary tbody tr")].map(r => r.innerText.replace(/\s+/g, " ").trim())`))
		if err != nil {
			t.Fatalf("read the canary table: %v", err)
		}
		got := strings.Join(rows, "\n")
		for _, want := range []string{"contact email (email) passed", "contact webhook (webhook) passed",
			"contact webhook-2 (webhook) failed parked: "} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: canary table\n%s\nlacks %q", scheme, got, want)
			}
		}
		if !strings.Contains(got, "410") {
			t.Errorf("%s: canary table\n%s\ndoes not show the 410", scheme, got)
		}
		browsertest.Screenshot(t, ctx, filepath.Join(dir, fmt.Sprintf("inbox-canary-desktop-%s.png", scheme)))
	}
}
