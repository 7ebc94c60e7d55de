package ses_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/headertest"
	"github.com/formoutbox/caddy-form-outbox/providers/ses"
	"github.com/formoutbox/caddy-form-outbox/providers/sesfake"
)

func newSES(t *testing.T, fake *sesfake.Server, timeout time.Duration) *ses.Provider {
	t.Helper()
	p, err := ses.New(context.Background(), ses.Config{
		From:             "Forms <forms@example.com>",
		Region:           "eu-west-1",
		Endpoint:         fake.URL(),
		AccessKeyID:      "AKIDEXAMPLE",
		SecretAccessKey:  "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
		ConfigurationSet: "forms",
		Timeout:          timeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func message() providers.Message {
	return providers.Message{
		ID: "0190d0c4-7a1b-7c3e-9f00-000000000001", Channel: "email",
		To: "sales@example.com", ReplyTo: "visitor@example.org", Subject: "New enquiry from Zoë",
		Text: "name: Zoë\n", HTML: "<p>Zoë</p>",
	}
}

func TestSendsWhatSESExpects(t *testing.T) {
	fake := sesfake.New()
	defer fake.Close()
	res, err := newSES(t, fake, 0).Send(context.Background(), message())
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || fake.Count() != 1 {
		t.Fatalf("fake saw %d requests, %d sent", fake.Count(), len(sent))
	}
	if res.Provider != "ses" || res.MessageID != sent[0].MessageID {
		t.Fatalf("result %+v, fake id %s", res, sent[0].MessageID)
	}
	e := sent[0].Email
	if e.FromEmailAddress != "Forms <forms@example.com>" {
		t.Errorf("From = %q", e.FromEmailAddress)
	}
	if len(e.Destination.ToAddresses) != 1 || e.Destination.ToAddresses[0] != "sales@example.com" {
		t.Errorf("To = %q", e.Destination.ToAddresses)
	}
	if len(e.ReplyToAddresses) != 1 || e.ReplyToAddresses[0] != "visitor@example.org" {
		t.Errorf("ReplyTo = %q", e.ReplyToAddresses)
	}
	s := e.Content.Simple
	if s.Subject.Data != "New enquiry from Zoë" || s.Body.Text.Data != "name: Zoë\n" || s.Body.Html.Data != "<p>Zoë</p>" {
		t.Errorf("content = %+v", s)
	}
	if e.ConfigurationSetName != "forms" || e.Tag(ses.DefaultTagName) != message().ID {
		t.Errorf("configuration set %q, tags %+v", e.ConfigurationSetName, e.EmailTags)
	}
	auth := sent[0].Request.Header.Get("Authorization")
	if !strings.Contains(auth, "Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/eu-west-1/ses/") {
		t.Errorf("Authorization = %q: want SigV4 with the static key in eu-west-1", auth)
	}
}

// TestErrorTable runs one SES answer per error class of docs/design.md, 'SES' through the
// real SDK and checks the class, the failover verdict, and that the SDK made exactly
// one request (its retryer is really off).
func TestErrorTable(t *testing.T) {
	cases := []struct {
		name     string
		reply    sesfake.Reply
		class    providers.Class
		failover bool
		retry    time.Duration
	}{
		{"throttling", sesfake.Throttling(), providers.Temporary, true, 0},
		{"throttling with Retry-After", func() sesfake.Reply { r := sesfake.Throttling(); r.RetryAfter = "7"; return r }(), providers.Temporary, true, 7 * time.Second},
		{"limit exceeded", sesfake.LimitExceeded(), providers.Temporary, true, 0},
		{"sending paused", sesfake.SendingPaused(), providers.Temporary, true, 0},
		{"account suspended", sesfake.AccountSuspended(), providers.Temporary, true, 0},
		{"mail-from not verified", sesfake.MailFromNotVerified(), providers.Temporary, true, 0},
		{"identity not verified", sesfake.NotVerified(), providers.Temporary, true, 0},
		{"configuration set missing", sesfake.ConfigSetNotFound(), providers.Temporary, true, 0},
		{"internal error", sesfake.InternalError(), providers.Temporary, true, 0},
		{"unavailable", sesfake.Unavailable(), providers.Temporary, true, 0},
		{"bad credentials", sesfake.Reply{Status: 403, Type: "UnrecognizedClientException", Message: "The security token included in the request is invalid."}, providers.Permanent, true, 0},
		{"message rejected", sesfake.Rejected(), providers.Permanent, false, 0},
		{"bad request", sesfake.BadRequest(), providers.Permanent, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := sesfake.New()
			defer fake.Close()
			fake.Enqueue(tc.reply)
			_, err := newSES(t, fake, 0).Send(context.Background(), message())
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *providers.Error", err)
			}
			if pe.Class != tc.class || pe.Failover != tc.failover || pe.RetryAfter != tc.retry {
				t.Fatalf("class %v failover %v retry-after %v, want %v %v %v (%v)", pe.Class, pe.Failover, pe.RetryAfter, tc.class, tc.failover, tc.retry, err)
			}
			// Only a refused credential is the account's failure (it parks the e-mail
			// destination); a throttle or a rejected message is not.
			if want := tc.reply.Status == 403; pe.Destination != want {
				t.Errorf("destination %v, want %v", pe.Destination, want)
			}
			if pe.Code != tc.reply.Type || pe.HTTPStatus != tc.reply.Status {
				t.Errorf("code %q status %d, want %q %d", pe.Code, pe.HTTPStatus, tc.reply.Type, tc.reply.Status)
			}
			if n := fake.Count(); n != 1 {
				t.Fatalf("SES received %d requests for one attempt, want 1 (SDK retries must be off)", n)
			}
		})
	}
}

func TestConnectionRefusedFailsOverAtOnce(t *testing.T) {
	fake := sesfake.New()
	defer fake.Close()
	fake.Refuse()
	_, err := newSES(t, fake, 0).Send(context.Background(), message())
	pe := providers.Classify(err)
	if pe.Class != providers.Temporary || !pe.Failover {
		t.Fatalf("refused: %v (class %v failover %v), want temporary with failover", err, pe.Class, pe.Failover)
	}
	if fake.Count() != 0 {
		t.Fatalf("fake counted %d requests while refusing", fake.Count())
	}
}

func TestWrittenWithoutAnswerIsAmbiguous(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply sesfake.Reply
	}{{"hang", sesfake.Reply{Hang: true}}, {"drop", sesfake.Reply{Drop: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := sesfake.New()
			defer fake.Close()
			fake.Enqueue(tc.reply)
			_, err := newSES(t, fake, 300*time.Millisecond).Send(context.Background(), message())
			pe := providers.Classify(err)
			if pe.Class != providers.Ambiguous || pe.Failover {
				t.Fatalf("%v: class %v failover %v, want ambiguous without failover", err, pe.Class, pe.Failover)
			}
			if fake.Count() != 1 {
				t.Fatalf("fake saw %d requests, want 1", fake.Count())
			}
		})
	}
}

func TestHeaderInjectionRefusedBeforeSending(t *testing.T) {
	fake := sesfake.New()
	defer fake.Close()
	p := newSES(t, fake, 0)
	for _, m := range []providers.Message{
		func() providers.Message { m := message(); m.Subject = "hi\r\nBcc: victim@example.net"; return m }(),
		func() providers.Message {
			m := message()
			m.ReplyTo = "a@example.org\nBcc: victim@example.net"
			return m
		}(),
	} {
		_, err := p.Send(context.Background(), m)
		if pe := providers.Classify(err); pe.Class != providers.Permanent || pe.Code != "header_injection" {
			t.Fatalf("err = %v, want permanent header_injection", err)
		}
	}
	if fake.Count() != 0 {
		t.Fatalf("SES received %d requests, want none", fake.Count())
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, cfg := range []ses.Config{
		{From: "not an address", Region: "eu-west-1"},
		{From: "forms@example.com", Region: "eu-west-1", AccessKeyID: "AKID"},
	} {
		if _, err := ses.New(context.Background(), cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

// TestHeaderValuesReachClientsSafely checks what the API is asked to put in the headers
// it builds, by the cases and rules shared with the other providers.
func TestHeaderValuesReachClientsSafely(t *testing.T) {
	fake := sesfake.New()
	defer fake.Close()
	headertest.SendAll(t, newSES(t, fake, 0), message())
	sent := fake.Sent()
	if len(sent) != len(headertest.Cases) {
		t.Fatalf("the fake got %d emails, want %d", len(sent), len(headertest.Cases))
	}
	for i, c := range headertest.Cases {
		rt := ""
		if got := sent[i].Email.ReplyToAddresses; len(got) > 0 {
			rt = strings.Join(got, ", ")
		}
		headertest.Check(t, c, sent[i].Email.Content.Simple.Subject.Data, rt)
	}
}

func TestMessageFromReplacesTheConfiguredSender(t *testing.T) {
	fake := sesfake.New()
	defer fake.Close()
	m := message()
	m.From = "Example Ltd <hello@example.com>"
	if _, err := newSES(t, fake, 0).Send(context.Background(), m); err != nil {
		t.Fatalf("send: %v", err)
	}
	if sent := fake.Sent(); len(sent) != 1 || sent[0].Email.FromEmailAddress != m.From {
		t.Fatalf("sent = %+v, want one from %q", sent, m.From)
	}
}
