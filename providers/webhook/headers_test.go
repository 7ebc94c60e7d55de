package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/webhook"
)

// TestCustomHeaders: configured headers arrive, per URL, and cannot replace the
// Standard Webhooks headers a receiver verifies.
func TestCustomHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer srv.Close()
	target := srv.URL + "/hook"
	p := webhook.New(webhook.Config{
		Secret: func(string) string { return secret },
		Headers: func(u string) map[string]string {
			if u != target {
				return nil
			}
			return map[string]string{"Authorization": "Bearer crm-token", "X-Tenant": "acme",
				"webhook-id": "forged", "Content-Type": "text/plain"}
		},
	})
	if _, err := p.Send(context.Background(), providers.Message{ID: "msg_7", URL: target, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	h := <-got
	if h.Get("Authorization") != "Bearer crm-token" || h.Get("X-Tenant") != "acme" {
		t.Errorf("custom headers missing: %v", h)
	}
	if h.Get("webhook-id") != "msg_7" || h.Get("Content-Type") != "application/json" || h.Get("webhook-signature") == "" {
		t.Errorf("standard headers overridden: webhook-id %q Content-Type %q signature %q",
			h.Get("webhook-id"), h.Get("Content-Type"), h.Get("webhook-signature"))
	}
}

// The JSON config can hold names the Caddyfile refuses; resolving them at provision is
// where every config passes, so the checks live there too.
func TestResolveHeaders(t *testing.T) {
	resolve := strings.NewReplacer("{env.FORM_OUTBOX_TEST_TOKEN}", "s3cret",
		"{env.FORM_OUTBOX_TEST_BREAK}", "a\r\nX-Forged: 1").Replace
	got, err := webhook.ResolveHeaders(map[string]string{"Authorization": "Bearer {env.FORM_OUTBOX_TEST_TOKEN}", "X-Tenant": "acme"}, resolve)
	if err != nil || len(got) != 2 || got["Authorization"] != "Bearer s3cret" || got["X-Tenant"] != "acme" {
		t.Fatalf("resolved %v, %v; want the placeholder replaced and both headers kept", got, err)
	}
	for name, hs := range map[string]map[string]string{
		"same name in two cases":      {"X-Token": "a", "x-token": "b"},
		"reserved name":               {"webhook-signature": "v1,forged"},
		"line break after resolution": {"X-Token": "{env.FORM_OUTBOX_TEST_BREAK}"},
	} {
		if got, err := webhook.ResolveHeaders(hs, resolve); err == nil {
			t.Errorf("%s: resolved %v, want an error", name, got)
		}
	}
}
