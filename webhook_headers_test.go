package formoutbox

import (
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// The JSON config can hold names the Caddyfile refuses; resolving them at provision is
// where every config passes, so the checks live there too.
func TestResolveWebhookHeaders(t *testing.T) {
	t.Setenv("FORM_OUTBOX_TEST_TOKEN", "s3cret")
	repl := caddy.NewReplacer()
	got, err := resolveWebhookHeaders(repl, map[string]string{"Authorization": "Bearer {env.FORM_OUTBOX_TEST_TOKEN}", "X-Tenant": "acme"})
	if err != nil || len(got) != 2 || got["Authorization"] != "Bearer s3cret" || got["X-Tenant"] != "acme" {
		t.Fatalf("resolved %v, %v; want the placeholder replaced and both headers kept", got, err)
	}
	for name, hs := range map[string]map[string]string{
		"same name in two cases":      {"X-Token": "a", "x-token": "b"},
		"reserved name":               {"webhook-signature": "v1,forged"},
		"line break after resolution": {"X-Token": "{env.FORM_OUTBOX_TEST_BREAK}"},
	} {
		t.Setenv("FORM_OUTBOX_TEST_BREAK", "a\r\nX-Forged: 1")
		if got, err := resolveWebhookHeaders(repl, hs); err == nil {
			t.Errorf("%s: resolved %v, want an error", name, got)
		}
	}
}
