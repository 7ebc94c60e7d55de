package formoutbox

import (
	"testing"

	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
)

// An App whose Caddy context was never set (built by hand, as tests do) must still get
// its SES provider: emailProvider falls back to a background context. The guard used to
// compare the caddy.Context converted to an interface with nil, which is never true, so
// the SDK was handed a context whose embedded Context is nil and panicked on first use.
func TestEmailProviderWithoutCaddyContext(t *testing.T) {
	a := &App{App: caddyconf.App{Email: &caddyconf.EmailConfig{SES: &caddyconf.SESConfig{Region: "eu-west-1"}}}, from: "forms@example.com"}
	p, err := a.emailProvider()
	if err != nil {
		t.Fatalf("emailProvider: %v", err)
	}
	if p.Name() != "ses" {
		t.Errorf("provider %q, want ses", p.Name())
	}
}
