package outbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

func TestRouterSendsAutoreplyAsEmailFromItsSender(t *testing.T) {
	email := fake.New("mail")
	d := delivery(outbox.ChannelAutoreply, "ada@example.com", outbox.Payload{From: "Example Ltd <hello@example.com>",
		To: "ada@example.com", Subject: "We got your message", Text: "Thanks"})
	if _, err := (outbox.Router{Email: email}).Send(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	ms := email.Messages()
	if len(ms) != 1 || ms[0].Channel != "email" || ms[0].From != "Example Ltd <hello@example.com>" ||
		ms[0].To != "ada@example.com" || ms[0].ReplyTo != "" || ms[0].Subject != "We got your message" {
		t.Fatalf("email provider got %+v", ms)
	}
}

// suppressed is a suppression list holding one address.
type suppressed struct {
	outbox.FeedbackStore
	address string
}

func (s suppressed) IsSuppressed(_ context.Context, a string) (bool, error) {
	return outbox.NormalizeAddress(a) == s.address, nil
}

func TestSuppressionGuardStopsAutoreplies(t *testing.T) {
	email := fake.New("mail")
	g := outbox.SuppressionGuard{Next: outbox.Router{Email: email},
		List: func() outbox.FeedbackStore { return suppressed{address: "gone@example.com"} }}
	d := delivery(outbox.ChannelAutoreply, "gone@example.com", outbox.Payload{To: "gone@example.com", Text: "t"})
	_, err := g.Send(context.Background(), d)
	var perr *providers.Error
	if !errors.As(err, &perr) || perr.Class != providers.Permanent || perr.Code != outbox.ReasonSuppressed {
		t.Fatalf("send = %v, want permanent %s", err, outbox.ReasonSuppressed)
	}
	if n := len(email.Messages()); n != 0 {
		t.Fatalf("provider got %d messages", n)
	}
}
