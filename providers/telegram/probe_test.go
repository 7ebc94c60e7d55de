package telegram_test

import (
	"context"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers/telegram"
	"github.com/formoutbox/caddy-form-outbox/providers/telegramfake"
)

// TestProbeAsksGetMe: the probe answers nil for the bot's token and a 401 for another,
// whose error never holds the token, and names the chat the bot was removed from; no
// message is sent.
func TestProbeAsksGetMe(t *testing.T) {
	srv := telegramfake.New("123:right")
	t.Cleanup(srv.Close)
	if err := telegram.Probe(context.Background(), telegram.Bot{Token: "123:right", Endpoint: srv.URL()}, "-100123"); err != nil {
		t.Fatalf("probe: %v", err)
	}
	err := telegram.Probe(context.Background(), telegram.Bot{Token: "123:wrong", Endpoint: srv.URL()}, "-100123")
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "123:wrong") {
		t.Fatalf("probe with a wrong token: %v", err)
	}
	srv.Kick("-100123")
	err = telegram.Probe(context.Background(), telegram.Bot{Token: "123:right", Endpoint: srv.URL()}, "-100123")
	if err == nil || !strings.Contains(err.Error(), "chat -100123: ") || !strings.Contains(err.Error(), "bot was kicked") {
		t.Fatalf("probe of a chat the bot was removed from: %v", err)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("%d messages sent", n)
	}
}
