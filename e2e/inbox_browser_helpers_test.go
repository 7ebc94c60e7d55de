package e2e

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/formoutbox/caddy-form-outbox/internal/browsertest"
)

// operatorBrowser is Chromium signed in to p's inbox as ops (basic auth, inboxPassword),
// with the few steps the inbox's browser tests take.
type operatorBrowser struct {
	t    *testing.T
	p    *caddyProc
	ctx  context.Context
	auth string // the Authorization header it sends
}

func newOperatorBrowser(t *testing.T, p *caddyProc) *operatorBrowser {
	t.Helper()
	b := &operatorBrowser{t: t, p: p, ctx: browsertest.New(t, browsertest.Options{Timeout: 2 * time.Minute}),
		auth: "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:"+inboxPassword))}
	if _, err := chromedp.Call(b.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": b.auth}}); err != nil {
		t.Fatalf("set credentials: %v", err)
	}
	return b
}

// text is the text of the first element sel matches.
func (b *operatorBrowser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// click clicks sel and waits for the page the click loads (after the 303 of an action).
func (b *operatorBrowser) click(sel string) {
	b.t.Helper()
	if _, err := chromedp.RunResponse(b.ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		b.t.Fatalf("click %s: %v", sel, err)
	}
}

// open loads path and waits for the page's footer.
func (b *operatorBrowser) open(path string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(b.p.URL(path)), chromedp.WaitReady(chromedp.CSS("footer"))); err != nil {
		b.t.Fatalf("open %s: %v", path, err)
	}
}
