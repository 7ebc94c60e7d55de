package ses_test

import (
	"context"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers/sesfake"
)

// TestProbeReadsTheAccount: the probe asks GetAccount (no e-mail sent) and fails for an
// account whose sending is paused.
func TestProbeReadsTheAccount(t *testing.T) {
	fake := sesfake.New()
	defer fake.Close()
	p := newSES(t, fake, 0)
	if err := p.Probe(context.Background()); err != nil {
		t.Fatalf("probe: %v", err)
	}
	fake.PauseSending(true)
	if err := p.Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "sending is paused") {
		t.Fatalf("probe of a paused account: %v", err)
	}
	if n := len(fake.Sent()); n != 0 {
		t.Fatalf("%d e-mails sent", n)
	}
}
