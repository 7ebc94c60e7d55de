package senders

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/resendfake"
	"github.com/formoutbox/caddy-form-outbox/providers/sesfake"
)

// sendBurst hands n messages to p at once, as a worker draining a backlog does, and
// returns how long they took and the first error.
func sendBurst(t *testing.T, p providers.Provider, n int) (time.Duration, error) {
	t.Helper()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Send(context.Background(), providers.Message{ID: fmt.Sprintf("d%d", i), Channel: "email",
				To: "sales@example.com", Subject: "s", Text: "t"})
			if err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return time.Since(start), first
}

// SES and Resend are paced to their default rates (14/s and 2/s) without any `rate`
// option, so a burst to a provider that enforces them gets no 429; `rate off` removes
// the pacing.
func TestEmailProvidersArePacedToTheirDefaultRates(t *testing.T) {
	t.Run("ses", func(t *testing.T) {
		srv := sesfake.New()
		defer srv.Close()
		srv.EnforceRate(14)
		p, err := NewEmail(context.Background(), Email{From: "forms@example.com", SES: &SES{Region: "eu-west-1",
			Endpoint: srv.URL(), AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}})
		if err != nil {
			t.Fatal(err)
		}
		// 14 go in the first second's burst allowance of the fake and 14 more need a second.
		took, err := sendBurst(t, p, 29)
		if err != nil || srv.Throttled() != 0 {
			t.Fatalf("burst of 29 to SES: %v, %d throttled", err, srv.Throttled())
		}
		if took < 2*time.Second {
			t.Errorf("29 sends at 14/s took %v, want at least 2s", took)
		}
	})
	t.Run("resend", func(t *testing.T) {
		srv := resendfake.New()
		defer srv.Close()
		srv.EnforceRate(2)
		p, err := NewEmail(context.Background(), Email{From: "forms@example.com",
			Resend: &Resend{APIKey: "re_test", Endpoint: srv.URL()}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sendBurst(t, p, 5); err != nil || srv.Throttled() != 0 {
			t.Fatalf("burst of 5 to Resend: %v, %d throttled", err, srv.Throttled())
		}
	})
	t.Run("off", func(t *testing.T) {
		srv := resendfake.New()
		defer srv.Close()
		srv.EnforceRate(2)
		p, err := NewEmail(context.Background(), Email{From: "forms@example.com",
			Resend: &Resend{APIKey: "re_test", Endpoint: srv.URL(), Rate: "off"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sendBurst(t, p, 5); err == nil || srv.Throttled() == 0 {
			t.Fatalf("burst of 5 unpaced: %v, %d throttled; want the fake's 429s", err, srv.Throttled())
		}
	})
}
