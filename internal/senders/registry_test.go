package senders

import (
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TestTelegramChatTakesOneBot: the bot is found by chat id at send time, so two routes
// to one chat with different tokens are refused, and the same bot twice is fine.
func TestTelegramChatTakesOneBot(t *testing.T) {
	var reg Registry
	route := func(token string) intake.Route {
		return intake.Route{Name: "telegram", Channel: outbox.ChannelTelegram, ChatID: "-100123", Token: token}
	}
	if err := reg.RegisterTelegramBots("contact", []intake.Route{route("1:A")}); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterTelegramBots("quote", []intake.Route{route("1:A")}); err != nil {
		t.Fatalf("the same bot twice: %v", err)
	}
	err := reg.RegisterTelegramBots("quote", []intake.Route{route("2:B")})
	if err == nil || !strings.Contains(err.Error(), "telegram chat -100123 is configured with two different tokens") ||
		strings.Contains(err.Error(), "2:B") || strings.Contains(err.Error(), "1:A") {
		t.Fatalf("two tokens for one chat: %v", err)
	}
	if bot, ok := reg.TelegramBot("-100123"); !ok || bot.Token != "1:A" {
		t.Fatalf("bot %+v %v, want the first", bot, ok)
	}
}
