package formoutbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

func canaryForm(t *testing.T, name string, c *intake.Canary, routes ...intake.Route) *intake.Config {
	t.Helper()
	cfg := &intake.Config{Form: name, Routes: routes, Canary: c, IPHashKey: []byte("k")}
	if err := cfg.Provision(); err != nil {
		t.Fatalf("provision %s: %v", name, err)
	}
	return cfg
}

// TestCanaryResolution: a form's own canary wins over the global default, `canary off`
// turns the default off, a form with only digest routes is skipped by the default and
// refused with its own canary, and one form name may have one canary.
func TestCanaryResolution(t *testing.T) {
	hook := intake.Route{Channel: outbox.ChannelWebhook, URL: "https://crm.example.com/hook", Secret: "whsec_c2VjcmV0"}
	digest := intake.Route{Channel: outbox.ChannelEmail, To: []string{"boss@example.com"}, Digest: "hourly"}
	a := &App{App: caddyconf.App{Canary: &intake.Canary{Every: intake.Duration(6 * time.Hour)}}}
	for _, cfg := range []*intake.Config{
		canaryForm(t, "default", nil, hook),
		canaryForm(t, "own", &intake.Canary{Every: intake.Duration(time.Hour), Deadline: intake.Duration(time.Minute)}, hook),
		canaryForm(t, "off", &intake.Canary{Off: true}, hook),
		canaryForm(t, "digests", nil, digest),
	} {
		if err := a.registerCanary(cfg); err != nil {
			t.Fatalf("register %s: %v", cfg.Form, err)
		}
	}
	var got []string
	for _, f := range a.canaries.forms {
		got = append(got, f.Name+" "+f.Every.String()+" "+f.Deadline.String()+" "+strings.Join(f.Routes, ","))
	}
	if want := "default 6h0m0s 15m0s webhook|own 1h0m0s 1m0s webhook"; strings.Join(got, "|") != want {
		t.Errorf("canaries = %q, want %q", got, want)
	}
	if err := a.registerCanary(canaryForm(t, "own", nil, hook)); err == nil || !strings.Contains(err.Error(), "configured twice") {
		t.Errorf("second canary of form own: %v, want refused", err)
	}
	err := a.registerCanary(canaryForm(t, "digest-only", &intake.Canary{Every: intake.Duration(time.Hour)}, digest))
	if err == nil || !strings.Contains(err.Error(), "no route a canary can check") {
		t.Errorf("own canary on a digest-only form: %v, want refused", err)
	}
}

// TestCanaryAlertSourceReadsTheFormsRegisteredLater: the source taken before the
// handlers registered their canaries reports the failed routes registered since.
func TestCanaryAlertSourceReadsTheFormsRegisteredLater(t *testing.T) {
	st := storetest.OpenSQLite(t)
	a := &App{store: st}
	src := a.CanaryAlertSource()
	hook := intake.Route{Channel: outbox.ChannelWebhook, URL: "https://crm.example.com/hook", Secret: "whsec_c2VjcmV0"}
	if err := a.registerCanary(canaryForm(t, "contact", &intake.Canary{Every: intake.Duration(time.Hour)}, hook)); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if _, err := st.RecordCanaryResult(context.Background(), outbox.CanaryResult{Form: "contact", Route: "webhook",
		Channel: outbox.ChannelWebhook, PeriodStart: now, Error: "dead: 410 Gone", At: now}); err != nil {
		t.Fatal(err)
	}
	cs, err := src.Conditions(context.Background(), now)
	if err != nil || len(cs) != 1 || cs[0].Kind != outbox.AlertCanaryFailed || cs[0].Key != "contact/webhook" || cs[0].Channel != "webhook" {
		t.Errorf("conditions = %+v (%v), want canary_failed for contact/webhook", cs, err)
	}
}
