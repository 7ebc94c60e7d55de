package senders

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/ratelimit"
)

// TestPacerPacesEachTargetAtItsRate: e-mail at the chain's first provider's rate, each
// webhook and chat URL at its route's rate or its channel's default (webhooks: none),
// each Telegram chat at 1/s and each bot at 30/s across its chats.
func TestPacerPacesEachTargetAtItsRate(t *testing.T) {
	const hookA, hookB, slackURL = "https://a.example.com/h", "https://b.example.com/h", "https://hooks.slack.com/services/T/B/X"
	routes := []intake.Route{
		{Name: "a", Channel: outbox.ChannelWebhook, URL: hookA, Rate: "2/s"},
		{Name: "b", Channel: outbox.ChannelWebhook, URL: hookB},
		{Name: "slack", Channel: outbox.ChannelSlack, URL: slackURL},
		{Name: "discord", Channel: outbox.ChannelDiscord, URL: "https://discord.com/api/webhooks/1/x", Rate: "off"},
	}
	for i := range 31 {
		routes = append(routes, intake.Route{Name: fmt.Sprintf("tg%d", i), Channel: outbox.ChannelTelegram,
			ChatID: fmt.Sprint(-100 - i), Token: "123:bot"})
	}
	var reg Registry
	if err := reg.RegisterTelegramBots("contact", routes); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterRates("contact", routes); err != nil {
		t.Fatal(err)
	}
	rate, err := EmailRate(Email{SES: &SES{}, Resend: &Resend{Rate: "off"}})
	if err != nil || rate != 14 {
		t.Fatalf("the e-mail rate of ses then resend: %v, %v; want SES's default 14/s", rate, err)
	}
	p := &Pacer{Email: rate, Registry: &reg}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// first sends are taken; the second is refused until the rate's interval has passed.
	for _, tc := range []struct {
		name   string
		d      outbox.Delivery
		second time.Duration // 0: the second send is taken too
	}{
		{"email", outbox.Delivery{ID: uuid.New(), Channel: outbox.ChannelEmail, Recipient: "sales@example.com"}, ratelimit.Interval(14)},
		{"webhook with rate", outbox.Delivery{ID: uuid.New(), Channel: outbox.ChannelWebhook, Recipient: hookA}, ratelimit.Interval(2)},
		{"webhook without", outbox.Delivery{ID: uuid.New(), Channel: outbox.ChannelWebhook, Recipient: hookB}, 0},
		{"slack default", outbox.Delivery{ID: uuid.New(), Channel: outbox.ChannelSlack, Recipient: slackURL}, ratelimit.Interval(1)},
		{"discord off", outbox.Delivery{ID: uuid.New(), Channel: outbox.ChannelDiscord, Recipient: "https://discord.com/api/webhooks/1/x"}, 0},
		{"teams not configured: its default", outbox.Delivery{ID: uuid.New(), Channel: outbox.ChannelTeams, Recipient: "https://x.webhook.office.com/y"}, ratelimit.Interval(1)},
		{"telegram chat", outbox.Delivery{ID: uuid.New(), Channel: outbox.ChannelTelegram, Recipient: "-100"}, ratelimit.Interval(1)},
	} {
		if ok, at := p.Reserve(tc.d, t0); !ok {
			t.Errorf("%s: the first send refused until %v", tc.name, at)
		}
		ok, at := p.Reserve(tc.d, t0)
		switch {
		case tc.second == 0 && !ok:
			t.Errorf("%s: the second send refused until %v; want it unpaced", tc.name, at)
		case tc.second != 0 && (ok || !at.Equal(t0.Add(tc.second))):
			t.Errorf("%s: the second send: %v, retry at %v; want refused until %v", tc.name, ok, at, t0.Add(tc.second))
		}
	}
	// Chat -100 sent at t0; the bot's other chats are taken one bot interval apart
	// (30/s), and one more chat at the last one's instant waits for the bot's next slot.
	botInterval := ratelimit.Interval(30)
	at := t0
	for i := 1; i < 30; i++ {
		at = t0.Add(time.Duration(i) * botInterval)
		if ok, _ := p.Reserve(outbox.Delivery{ID: uuid.New(), Channel: outbox.ChannelTelegram, Recipient: fmt.Sprint(-100 - i)}, at); !ok {
			t.Fatalf("chat %d of the bot refused on the bot's slot", i+1)
		}
	}
	if ok, retry := p.Reserve(outbox.Delivery{ID: uuid.New(), Channel: outbox.ChannelTelegram, Recipient: "-130"}, at); ok || !retry.Equal(at.Add(botInterval)) {
		t.Errorf("a second message of the bot in one instant: %v, retry at %v; want refused until %v", ok, retry, at.Add(botInterval))
	}
}

// TestRouteRatesMustAgree: two forms naming one target with different rates are refused
// at provision, a chat URL (a credential) never quoted; a JSON route with a bad rate is
// refused with its form and route.
func TestRouteRatesMustAgree(t *testing.T) {
	var reg Registry
	const slackURL = "https://hooks.slack.com/services/T/B/SECRET"
	first := []intake.Route{{Name: "w", Channel: outbox.ChannelWebhook, URL: "https://a.example.com/h", Rate: "2/s"},
		{Name: "s", Channel: outbox.ChannelSlack, URL: slackURL}}
	if err := reg.RegisterRates("contact", first); err != nil {
		t.Fatal(err)
	}
	// The same rates written differently (120/m is 2/s; unset is slack's default 1/s) agree.
	if err := reg.RegisterRates("quote", []intake.Route{{Name: "w", Channel: outbox.ChannelWebhook, URL: "https://a.example.com/h", Rate: "120/m"},
		{Name: "s", Channel: outbox.ChannelSlack, URL: slackURL, Rate: "1/s"}}); err != nil {
		t.Fatalf("equal rates refused: %v", err)
	}
	err := reg.RegisterRates("quote", []intake.Route{{Name: "w2", Channel: outbox.ChannelWebhook, URL: "https://a.example.com/h", Rate: "3/s"}})
	if err == nil || !strings.Contains(err.Error(), "https://a.example.com/h") || !strings.Contains(err.Error(), "two different rates") {
		t.Errorf("a webhook with two rates: %v", err)
	}
	err = reg.RegisterRates("quote", []intake.Route{{Name: "s2", Channel: outbox.ChannelSlack, URL: slackURL, Rate: "off"}})
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("a slack webhook with two rates: %v; want refused without its URL", err)
	}
	err = reg.RegisterRates("quote", []intake.Route{{Name: "bad", Channel: outbox.ChannelWebhook, URL: "https://b.example.com/h", Rate: "5/h"}})
	if err == nil || !strings.Contains(err.Error(), "form quote: route bad") {
		t.Errorf("a bad rate: %v", err)
	}
}
