package resend_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/headertest"
	"github.com/formoutbox/caddy-form-outbox/providers/resend"
	"github.com/formoutbox/caddy-form-outbox/providers/resendfake"
)

const apiKey = "re_test_123"

func newResend(t *testing.T, fake *resendfake.Server, timeout time.Duration) *resend.Provider {
	t.Helper()
	p, err := resend.New(resend.Config{From: "Forms <forms@example.com>", APIKey: apiKey, Endpoint: fake.URL(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func message() providers.Message {
	return providers.Message{
		ID: "0190d0c4-7a1b-7c3e-9f00-000000000002", Channel: "email",
		To: "sales@example.com", ReplyTo: "visitor@example.org", Subject: "Hello",
		Text: "name: Zoë\n", HTML: "<p>Zoë</p>",
	}
}

func TestSendsWithIdempotencyKey(t *testing.T) {
	fake := resendfake.New()
	defer fake.Close()
	fake.RequireAPIKey(apiKey)
	p := newResend(t, fake, 0)
	m := message()
	res, err := p.Send(context.Background(), m)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	again, err := p.Send(context.Background(), m) // a retry after an ambiguous outcome
	if err != nil {
		t.Fatalf("second send: %v", err)
	}
	emails := fake.Emails()
	if len(emails) != 1 || fake.Count() != 2 {
		t.Fatalf("fake: %d requests, %d emails; want 2 requests and 1 email", fake.Count(), len(emails))
	}
	if res.Provider != "resend" || res.MessageID != emails[0].ID || again.MessageID != res.MessageID {
		t.Fatalf("results %+v %+v, fake id %s", res, again, emails[0].ID)
	}
	for _, r := range fake.Requests() {
		if r.Header.Get("Idempotency-Key") != m.ID {
			t.Errorf("Idempotency-Key = %q, want the delivery id", r.Header.Get("Idempotency-Key"))
		}
	}
	e := emails[0].Email
	if e.From != "Forms <forms@example.com>" || len(e.To) != 1 || e.To[0] != "sales@example.com" ||
		e.ReplyTo != "visitor@example.org" || e.Subject != "Hello" || e.Text != m.Text || e.HTML != m.HTML {
		t.Fatalf("email = %+v", e)
	}
}

func TestErrorTable(t *testing.T) {
	cases := []struct {
		name  string
		reply resendfake.Reply
		class providers.Class
		retry time.Duration
	}{
		{"rate limited", resendfake.RateLimited("3"), providers.Temporary, 3 * time.Second},
		{"application error", resendfake.ApplicationError(), providers.Temporary, 0},
		{"unavailable", resendfake.Reply{Status: 503, Name: "service_unavailable"}, providers.Temporary, 0},
		{"concurrent idempotent requests", resendfake.ConcurrentIdempotent(), providers.Temporary, 0},
		{"validation error 422", resendfake.ValidationError(), providers.Permanent, 0},
		{"bad request 400", resendfake.Reply{Status: 400, Name: "invalid_parameter"}, providers.Permanent, 0},
		{"missing key 401", resendfake.MissingAPIKey(), providers.Permanent, 0},
		{"invalid key 403", resendfake.InvalidAPIKey(), providers.Permanent, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := resendfake.New()
			defer fake.Close()
			fake.Enqueue(tc.reply)
			_, err := newResend(t, fake, 0).Send(context.Background(), message())
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *providers.Error", err)
			}
			if pe.Class != tc.class || pe.RetryAfter != tc.retry || pe.HTTPStatus != tc.reply.Status || pe.Code != tc.reply.Name {
				t.Fatalf("got class %v retry-after %v status %d code %q, want %v %v %d %q (%v)",
					pe.Class, pe.RetryAfter, pe.HTTPStatus, pe.Code, tc.class, tc.retry, tc.reply.Status, tc.reply.Name, err)
			}
			// A refused key is the account's failure: it parks the e-mail destination, and
			// another provider may take the message meanwhile.
			if key := tc.reply.Status == 401 || tc.reply.Status == 403; pe.Destination != key || (key && !pe.Failover) {
				t.Errorf("destination %v failover %v, want destination %v with failover", pe.Destination, pe.Failover, key)
			}
			if fake.Count() != 1 {
				t.Fatalf("fake saw %d requests, want 1", fake.Count())
			}
		})
	}
}

func TestNoAnswer(t *testing.T) {
	fake := resendfake.New()
	defer fake.Close()
	fake.Enqueue(resendfake.Reply{Hang: true})
	_, err := newResend(t, fake, 300*time.Millisecond).Send(context.Background(), message())
	if pe := providers.Classify(err); pe.Class != providers.Ambiguous || pe.Failover {
		t.Fatalf("hang: %v, want ambiguous without failover", err)
	}
	fake.Refuse()
	_, err = newResend(t, fake, 0).Send(context.Background(), message())
	if pe := providers.Classify(err); pe.Class != providers.Temporary || !pe.Failover {
		t.Fatalf("refused: %v, want temporary with failover", err)
	}
	if err := fake.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, err := newResend(t, fake, 0).Send(context.Background(), message()); err != nil {
		t.Fatalf("after resume: %v", err)
	}
}

func TestHeaderInjectionRefused(t *testing.T) {
	fake := resendfake.New()
	defer fake.Close()
	m := message()
	m.Subject = "x\nBcc: victim@example.net"
	_, err := newResend(t, fake, 0).Send(context.Background(), m)
	if pe := providers.Classify(err); pe.Class != providers.Permanent || pe.Code != "header_injection" || fake.Count() != 0 {
		t.Fatalf("err %v, %d requests; want permanent header_injection and none sent", err, fake.Count())
	}
}

// TestHeaderValuesReachClientsSafely checks what the API is asked to put in the headers
// it builds, by the cases and rules shared with the other providers.
func TestHeaderValuesReachClientsSafely(t *testing.T) {
	fake := resendfake.New()
	defer fake.Close()
	headertest.SendAll(t, newResend(t, fake, 0), message())
	sent := fake.Emails()
	if len(sent) != len(headertest.Cases) {
		t.Fatalf("the fake got %d emails, want %d", len(sent), len(headertest.Cases))
	}
	for i, c := range headertest.Cases {
		headertest.Check(t, c, sent[i].Email.Subject, sent[i].Email.ReplyTo)
	}
}

func TestMessageFromReplacesTheConfiguredSender(t *testing.T) {
	fake := resendfake.New()
	defer fake.Close()
	m := message()
	m.From = "Example Ltd <hello@example.com>"
	if _, err := newResend(t, fake, 0).Send(context.Background(), m); err != nil {
		t.Fatalf("send: %v", err)
	}
	if e := fake.Emails(); len(e) != 1 || e[0].Email.From != m.From {
		t.Fatalf("emails = %+v, want one from %q", e, m.From)
	}
}
