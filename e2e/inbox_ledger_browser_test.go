package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/formoutbox/caddy-form-outbox/internal/browsertest"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

const inboxLedgerCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		worker {
			poll_interval 200ms
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
	form_outbox /contact {
		form contact
		field name required
		honeypot _gotcha
		notify email sales@example.com
	}
	form_outbox /leads {
		form leads
		notify email leads@example.com
	}
	respond "static site"
}
`

// TestInboxLedgerChartInBrowser opens the inbox overview in Chromium over two weeks of
// history (written to the database before Caddy starts) and today's posts: a chart per
// form a person reads at a glance, named for screen readers, coloured by class in light
// and dark, with the numbers as a table under it and the day a lead went missing
// marked. FORM_OUTBOX_SCREENSHOTS=1 writes docs/images/inbox-ledger-desktop-*.png.
func TestInboxLedgerChartInBrowser(t *testing.T) {
	t.Parallel()
	hash := inboxPasswordHash(t)
	dir := t.TempDir()
	seedLedgerHistory(t, filepath.Join(dir, "forms.db"))
	p := newCaddy(t, caddyOpts{Dir: dir, Caddyfile: strings.NewReplacer("{{HASH}}", hash).Replace(inboxLedgerCaddyfile)})
	waitUp(t, p)
	var today []string
	for i := 0; i < 3; i++ {
		today = append(today, postAdminForm(t, p, "/contact", url.Values{"name": {fmt.Sprint("Ada ", i)}}))
	}
	postAdminForm(t, p, "/contact", url.Values{"name": {"Bot"}, "_gotcha": {"x"}})
	postQuarantined(t, p)
	today = append(today, postAdminForm(t, p, "/leads", url.Values{"name": {"Grace"}}))
	for _, id := range today {
		p.waitDelivery(t, id, "sent")
	}

	ctx := browsertest.New(t, browsertest.Options{Timeout: 2 * time.Minute})
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:"+inboxPassword))
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860), chromedp.Navigate(p.URL("/inbox/")), chromedp.WaitReady(chromedp.CSS("footer"))); err != nil {
		t.Fatalf("open the overview: %v", err)
	}
	eval := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return s
	}

	if got := eval(`String(document.querySelectorAll("svg.chart[role=img]").length)`); got != "2" {
		t.Fatalf("%s charts with role=img, want one per form", got)
	}
	if got := eval(`document.querySelector("svg.chart").getAttribute("aria-labelledby").split(" ").map(id => document.getElementById(id).textContent).join(" | ")`); !strings.HasPrefix(got, "Form contact, last 14 days (UTC): submissions and deliveries per day | ") ||
		!strings.Contains(got, "posts answered") {
		t.Errorf("the chart's accessible name and description: %q", got)
	}
	if got := eval(`String(document.querySelectorAll("[style]").length)`); got != "0" {
		t.Errorf("%s elements carry an inline style, which the CSP refuses", got)
	}
	// Every day of the two weeks has its column: bars in 14 columns of contact's chart.
	if got := eval(`String(new Set([...document.querySelectorAll("#ledger-0 rect.c-accepted")].map(r => r.getAttribute("x"))).size)`); got != "14" {
		t.Errorf("contact's accepted bars stand in %s columns, want 14", got)
	}
	if got := eval(`String(document.querySelectorAll("#ledger-1 rect.c-mismatch").length) + " " + String(document.querySelectorAll("#ledger-0 rect.c-mismatch").length)`); got != "1 0" {
		t.Errorf("mismatch marks (leads, contact) = %s, want 1 on leads' lost day only", got)
	}
	if got := eval(`document.querySelector("[role=alert]").textContent`); !strings.Contains(got, "a mismatch on 1 form-day") {
		t.Errorf("the overview's alert = %q", got)
	}
	// Colours come from the stylesheet: visible, and switched for dark mode.
	fill := func() string {
		return eval(`getComputedStyle(document.querySelector("rect.c-accepted")).fill + " " + getComputedStyle(document.querySelector("rect.c-dead")).fill`)
	}
	light := fill()
	setScheme(t, ctx, "dark")
	dark := fill()
	setScheme(t, ctx, "light")
	if light == dark || strings.Contains(light, "rgb(0, 0, 0)") || light == "" {
		t.Errorf("bar colours light %q, dark %q: want the classes' colours, different per scheme", light, dark)
	}
	// The table alternative opens without JavaScript's help (details/summary) and names
	// the lost lead's day.
	if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.CSS("#ledger-1 summary"))); err != nil {
		t.Fatal(err)
	}
	lost := time.Now().UTC().AddDate(0, 0, -3).Format(time.DateOnly)
	if got := eval(`document.querySelector("#ledger-1 tr.mismatch").innerText`); !strings.Contains(got, lost) ||
		!strings.Contains(got, "1 accepted submission without a delivery") {
		t.Errorf("leads' mismatch row = %q, want %s and what is missing", got, lost)
	}
	if got := eval(`document.querySelector("#ledger-1 tbody tr:last-child").innerText`); !strings.Contains(got, time.Now().UTC().Format(time.DateOnly)) {
		t.Errorf("leads' last row = %q, want today", got)
	}

	shots := t.TempDir()
	if os.Getenv(envScreenshots) != "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		shots = filepath.Join(root, "docs", "images")
	}
	for _, scheme := range []string{"light", "dark"} {
		setScheme(t, ctx, scheme)
		browsertest.Screenshot(t, ctx, filepath.Join(shots, "inbox-ledger-desktop-"+scheme+".png"))
	}
}

func setScheme(t *testing.T, ctx context.Context, scheme string) {
	t.Helper()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
		t.Fatalf("emulate %s: %v", scheme, err)
	}
}

// seedLedgerHistory writes thirteen days of submissions, deliveries and answered counts
// before today into a new SQLite store at path, as a Caddy running then would have, and
// one lead of "leads" three days ago whose delivery is missing.
func seedLedgerHistory(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	today := outbox.UTCDay(time.Now())
	var counts []outbox.LedgerCount
	for ago := 13; ago >= 1; ago-- {
		at := today.AddDate(0, 0, -ago).Add(10 * time.Hour)
		accepted, spam := 2+(ago*3)%5, ago%3
		for i := 0; i < accepted; i++ {
			sub := storetest.NewSubmission("contact", storetest.WithCreatedAt(at))
			d := storetest.NewDelivery(sub, "email", "sales@example.com")
			d.Status = outbox.DeliverySent
			if i == 0 && ago%5 == 0 {
				d.Status = outbox.DeliveryDead
			}
			storetest.MustAccept(t, s, sub, d)
		}
		for i := 0; i < spam; i++ {
			sub := storetest.NewSubmission("contact", storetest.WithCreatedAt(at), storetest.WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
			storetest.MustAccept(t, s, sub, storetest.NewDelivery(sub, "email", "sales@example.com"))
		}
		if ago%4 == 0 {
			sub := storetest.NewSubmission("contact", storetest.WithCreatedAt(at), storetest.WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation))
			storetest.MustAccept(t, s, sub, storetest.NewDelivery(sub, "email", "sales@example.com"))
		}
		leads := 1 + ago%2
		for i := 0; i < leads; i++ {
			sub := storetest.NewSubmission("leads", storetest.WithCreatedAt(at))
			d := storetest.NewDelivery(sub, "email", "leads@example.com")
			d.Status = outbox.DeliverySent
			if ago == 3 && i == 0 {
				storetest.MustAccept(t, s, sub) // its delivery is missing: the ledger flags it
				continue
			}
			storetest.MustAccept(t, s, sub, d)
		}
		counts = append(counts,
			outbox.LedgerCount{Day: outbox.UTCDay(at), Form: "contact", Answered: int64(accepted + spam)},
			outbox.LedgerCount{Day: outbox.UTCDay(at), Form: "leads", Answered: int64(leads)})
	}
	if err := s.RecordLedger(ctx, "before-the-test", counts, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
