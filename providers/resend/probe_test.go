package resend_test

import (
	"context"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers/resendfake"
)

// TestProbeChecksTheSenderDomain: the probe lists the domains (no e-mail sent) and
// passes when the sender's domain is verified; pending, absent or a wrong key fail.
func TestProbeChecksTheSenderDomain(t *testing.T) {
	fake := resendfake.New()
	defer fake.Close()
	fake.RequireAPIKey(apiKey)
	p := newResend(t, fake, 0)
	if err := p.Probe(context.Background()); err != nil {
		t.Fatalf("probe: %v", err)
	}
	fake.SetDomains(map[string]string{"example.com": "pending"})
	if err := p.Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "example.com is pending, not verified") {
		t.Fatalf("probe of a pending domain: %v", err)
	}
	fake.SetDomains(map[string]string{"other.example": "verified"})
	if err := p.Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "example.com is not in this account") {
		t.Fatalf("probe of a missing domain: %v", err)
	}
	fake.RequireAPIKey("re_other")
	if err := p.Probe(context.Background()); err == nil {
		t.Fatal("probe with a wrong key passed")
	}
	if n := len(fake.Emails()); n != 0 {
		t.Fatalf("%d e-mails sent", n)
	}
}
