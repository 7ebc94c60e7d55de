package inbox

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// The overview draws each form's last 14 days as an SVG a screen reader can name and
// describe, with the same numbers in a table, colours by class only (the CSP forbids
// inline styles), and says so when a day shows a mismatch.
func TestOverviewChartsTheLedger(t *testing.T) {
	f := newFixture(t)
	f.h.cfg.Ledger = func(ctx context.Context, forms []string, days int) (outbox.Ledger, error) {
		return outbox.BuildLedger(ctx, f.store, outbox.LedgerQuery{Days: days, Now: now, Forms: forms,
			Checked: func(string) bool { return true }})
	}
	f.accept("contact")
	f.accept("contact", storetest.WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
	f.kill() // the accepted one's delivery dies
	lost := storetest.NewSubmission("contact", storetest.WithCreatedAt(now.Add(-25*60*60*1e9)))
	storetest.MustAccept(t, f.store, lost) // yesterday, accepted, no delivery: a loss
	f.accept("jobs")

	w := f.do(http.MethodGet, "/inbox/", nil, nil)
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("overview = %d %s", w.Code, body)
	}
	if strings.Contains(body, " style=") {
		t.Error("the overview has an inline style attribute; the CSP blocks it")
	}
	charts := regexp.MustCompile(`<svg class="chart" viewBox="0 0 280 \d+" role="img" aria-labelledby="(ledger-\d)-t ledger-\d-d">`).FindAllStringSubmatch(body, -1)
	if len(charts) != 2 {
		t.Fatalf("%d charts, want one per form (contact, jobs):\n%s", len(charts), body)
	}
	for _, want := range []string{
		`<title id="ledger-0-t">Form contact, last 14 days (UTC): submissions and deliveries per day</title>`,
		`<desc id="ledger-0-d">0 posts answered, 2 accepted, 1 spam, 0 quarantined; 0 deliveries sent, 1 dead; a mismatch on 1 day.</desc>`,
		`<desc id="ledger-1-d">0 posts answered, 1 accepted, 0 spam, 0 quarantined; 0 deliveries sent, 0 dead; no mismatch.</desc>`,
		`<rect class="c-mismatch"`,
		`<p class="problems" role="alert">The ledger shows a mismatch on 1 form-day:`,
		`<tr class="mismatch"><th scope="row">2031-05-05</th><td class="num">0</td><td class="num">1</td>`,
		`<td>1 accepted submission without a delivery</td>`,
		`<th scope="row">2031-05-06</th><td class="num">0</td><td class="num">1</td><td class="num">1</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">0</td><td class="num">1</td><td>ok</td>`,
		`<text class="c-label" x="0" y="`, `text-anchor="start">04-23</text>`, `>05-06</text>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
	// The bars of a day stack within the band: the dead delivery's bar fills it (the
	// only delivery of the 14 days), today's column being the last.
	if !strings.Contains(body, `<rect class="c-dead" x="263" y="`) {
		t.Errorf("no dead bar in today's column:\n%s", body)
	}
}
