package outbox_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

func delivery(ch outbox.Channel, recipient string, p outbox.Payload) outbox.Delivery {
	raw, _ := json.Marshal(p)
	return outbox.Delivery{ID: uuid.Must(uuid.NewV7()), Route: "r", Channel: ch, Recipient: recipient, Payload: raw}
}

func TestRouterSendsByChannel(t *testing.T) {
	email, hook := fake.New("mail"), fake.New("hook")
	r := outbox.Router{Email: email, Webhook: hook}

	de := delivery(outbox.ChannelEmail, "sales@example.com", outbox.Payload{To: "sales@example.com",
		ReplyTo: "ada@example.com", Subject: "Hi", Text: "t", HTML: "<p>t</p>"})
	res, err := r.Send(context.Background(), de)
	if err != nil || res.Provider != "mail" {
		t.Fatalf("email: %+v, %v", res, err)
	}
	dw := delivery(outbox.ChannelWebhook, "https://crm.example.com/h", outbox.Payload{URL: "https://crm.example.com/h",
		Body: json.RawMessage(`{"a":"b"}`)})
	if res, err := r.Send(context.Background(), dw); err != nil || res.Provider != "hook" {
		t.Fatalf("webhook: %+v, %v", res, err)
	}

	ms := email.Messages()
	want := providers.Message{ID: de.ID.String(), Channel: "email", To: "sales@example.com", ReplyTo: "ada@example.com",
		Subject: "Hi", Text: "t", HTML: "<p>t</p>"}
	if len(ms) != 1 || ms[0].ID != want.ID || ms[0].Channel != want.Channel || ms[0].To != want.To ||
		ms[0].ReplyTo != want.ReplyTo || ms[0].Subject != want.Subject || ms[0].Text != want.Text || ms[0].HTML != want.HTML {
		t.Fatalf("email provider got %+v, want %+v", ms, want)
	}
	hs := hook.Messages()
	if len(hs) != 1 || hs[0].ID != dw.ID.String() || hs[0].URL != "https://crm.example.com/h" || string(hs[0].Body) != `{"a":"b"}` {
		t.Fatalf("webhook provider got %+v", hs)
	}
}

func TestRouterFallsBackToTheRecipient(t *testing.T) {
	email := fake.New("mail")
	d := delivery(outbox.ChannelEmail, "sales@example.com", outbox.Payload{Subject: "Hi"})
	if _, err := (outbox.Router{Email: email}).Send(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if ms := email.Messages(); len(ms) != 1 || ms[0].To != "sales@example.com" {
		t.Fatalf("got %+v", ms)
	}
}

func TestRouterErrorsArePermanent(t *testing.T) {
	cases := map[string]struct {
		r outbox.Router
		d outbox.Delivery
	}{
		"no webhook provider": {outbox.Router{Email: fake.New("")}, delivery(outbox.ChannelWebhook, "https://x.example/", outbox.Payload{})},
		"no email provider":   {outbox.Router{Webhook: fake.New("")}, delivery(outbox.ChannelEmail, "a@example.com", outbox.Payload{})},
		"unknown channel":     {outbox.Router{Email: fake.New("")}, delivery("sms", "+100", outbox.Payload{})},
		"bad payload": {outbox.Router{Email: fake.New("")}, outbox.Delivery{ID: uuid.New(), Channel: outbox.ChannelEmail,
			Payload: json.RawMessage(`{"to":`)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tc.r.Send(context.Background(), tc.d)
			if err == nil || providers.Classify(err).Class != providers.Permanent {
				t.Fatalf("err = %v, want Permanent", err)
			}
			if name == "no webhook provider" && !strings.Contains(err.Error(), "no webhook provider is configured") {
				t.Fatalf("err = %q does not say what is missing", err)
			}
		})
	}
}

// TestRouterSendsChatChannels checks that each chat channel reaches its own provider with
// the stored body, and that a payload without the recipient still goes where the row
// says: the chat id for Telegram, the webhook URL for the others.
func TestRouterSendsChatChannels(t *testing.T) {
	tg, sl, dc, tm := fake.New("telegram"), fake.New("slack"), fake.New("discord"), fake.New("teams")
	r := outbox.Router{Telegram: tg, Slack: sl, Discord: dc, Teams: tm}
	body := json.RawMessage(`{"text":"hi"}`)
	for _, c := range []struct {
		ch        outbox.Channel
		recipient string
		p         *fake.Provider
	}{
		{outbox.ChannelTelegram, "-100123", tg},
		{outbox.ChannelSlack, "https://hooks.slack.example/services/T/B/X", sl},
		{outbox.ChannelDiscord, "https://discord.example/api/webhooks/1/abc", dc},
		{outbox.ChannelTeams, "https://prod.example/workflows/1", tm},
	} {
		d := delivery(c.ch, c.recipient, outbox.Payload{Body: body})
		res, err := r.Send(context.Background(), d)
		if err != nil || res.Provider != string(c.ch) {
			t.Fatalf("%s: %+v, %v", c.ch, res, err)
		}
		ms := c.p.Messages()
		if len(ms) != 1 || string(ms[0].Body) != string(body) || ms[0].Channel != string(c.ch) {
			t.Fatalf("%s provider got %+v", c.ch, ms)
		}
		got := ms[0].URL
		if c.ch == outbox.ChannelTelegram {
			got = ms[0].To
		}
		if got != c.recipient {
			t.Fatalf("%s provider got recipient %q, want %q", c.ch, got, c.recipient)
		}
	}
}

// The router reports the SHA-256 of the body it handed the provider, sent or not, so the
// attempt row says which body a webhook or chat message carried; an e-mail has none.
func TestRouterReportsTheBodySent(t *testing.T) {
	hook, mail := fake.New("hook"), fake.New("mail")
	r := outbox.Router{Webhook: hook, Email: mail}
	body := `{"id":"x","status":"accepted"}`
	dw := delivery(outbox.ChannelWebhook, "https://crm.example.com/h", outbox.Payload{URL: "https://crm.example.com/h", Body: json.RawMessage(body)})
	sum := sha256.Sum256([]byte(body))
	if res, err := r.Send(context.Background(), dw); err != nil || res.BodySHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("webhook: %+v, %v; want body sha256 %x", res, err, sum)
	}
	de := delivery(outbox.ChannelEmail, "sales@example.com", outbox.Payload{To: "sales@example.com", Subject: "Hi", Text: "t"})
	if res, err := r.Send(context.Background(), de); err != nil || res.BodySHA256 != "" {
		t.Fatalf("email: %+v, %v; want no body hash", res, err)
	}
}
