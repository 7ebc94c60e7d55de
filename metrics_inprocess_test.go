package formoutbox

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// scrape gathers the running config's registry, which the admin endpoint serves at
// /metrics, into name -> label string -> value.
func scrape(t *testing.T, app *App) map[string]map[string]float64 {
	t.Helper()
	mfs, err := app.ctx.GetMetricsRegistry().Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		series := map[string]float64{}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue()
			if c := m.GetCounter(); c != nil {
				v = c.GetValue()
			}
			series[strings.Join(labels, ",")] = v
		}
		out[mf.GetName()] = series
	}
	return out
}

// Right after start, before any post, the counters the README's alert rules watch with
// increase() already have a series per channel, and the intake defences' counters one per
// form: a series born with its first event gives increase() nothing to compare against.
// A double post then moves the form's dedupe counter.
func TestInProcessMetricsExistFromStart(t *testing.T) {
	addr := freeAddr(t)
	runCaddy(t, map[string]any{
		"form_outbox": map[string]any{},
		"http":        httpApp(addr, contactHandler()),
	})
	app := runningApp(t)
	m := scrape(t, app)
	for _, ch := range []string{"channel=email", "channel=autoreply", "channel=webhook"} {
		if _, ok := m["form_outbox_deliveries_dead_total"][ch]; !ok {
			t.Errorf("form_outbox_deliveries_dead_total{%s} missing at start; have %v", ch, m["form_outbox_deliveries_dead_total"])
		}
	}
	for _, name := range []string{"form_outbox_rate_limited_total", "form_outbox_rate_limited_dropped_total", "form_outbox_deduplicated_total"} {
		if _, ok := m[name]["form=contact"]; !ok {
			t.Errorf("%s{form=contact} missing at start; have %v", name, m[name])
		}
	}
	before := m["form_outbox_deduplicated_total"]["form=contact"]

	// The same post twice without an Idempotency-Key: the second is answered from the
	// dedupe window.
	form := url.Values{"name": {"Ada"}, "email": {"ada@example.com"}, "message": {"twice"}}
	for i := 0; i < 2; i++ {
		resp, err := noRedirects.PostForm("http://"+addr+"/contact", form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("post %d: %d, want 303", i+1, resp.StatusCode)
		}
	}
	if got := scrape(t, app)["form_outbox_deduplicated_total"]["form=contact"]; got != before+1 {
		t.Errorf("form_outbox_deduplicated_total{form=contact} = %v after a double post, want %v", got, before+1)
	}
}
