package smtp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers/smtpfake"
)

// TestProbeAuthenticatesWithoutSending: a probe greets, starts TLS and authenticates
// as a send does, and begins no message; a refused AUTH and a relay without STARTTLS
// are errors that say so.
func TestProbeAuthenticatesWithoutSending(t *testing.T) {
	srv := newFake(t, smtpfake.Config{})
	if err := newProvider(t, srv, nil).Probe(context.Background()); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if n, got := srv.Sessions(), srv.Received(); n != 1 || len(got) != 0 {
		t.Fatalf("%d sessions, %d messages received; want 1 session and no message", n, len(got))
	}

	srv.At(smtpfake.AUTH, smtpfake.Reply{Code: 535, Text: "5.7.8 authentication credentials invalid"})
	if err := newProvider(t, srv, nil).Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "535") {
		t.Fatalf("probe with refused AUTH: %v", err)
	}
	plain := newFake(t, smtpfake.Config{NoSTARTTLS: true})
	if err := newProvider(t, plain, nil).Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "does not offer STARTTLS") {
		t.Fatalf("probe without STARTTLS: %v", err)
	}
	if len(srv.Received())+len(plain.Received()) != 0 {
		t.Fatal("a probe sent a message")
	}
}
