package chain_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chain"
	"github.com/formoutbox/caddy-form-outbox/providers/resend"
	"github.com/formoutbox/caddy-form-outbox/providers/resendfake"
	"github.com/formoutbox/caddy-form-outbox/providers/ses"
	"github.com/formoutbox/caddy-form-outbox/providers/sesfake"
)

// rig is the production email path on local fakes: the real SES and Resend clients in a
// chain, behind the outbox Router and a Worker on a SQLite store.
type rig struct {
	store  outbox.Store
	ses    *sesfake.Server
	resend *resendfake.Server
	worker *outbox.Worker
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{store: storetest.OpenSQLite(t), ses: sesfake.New(), resend: resendfake.New()}
	t.Cleanup(r.ses.Close)
	t.Cleanup(r.resend.Close)
	sp, err := ses.New(context.Background(), ses.Config{From: "forms@example.com", Region: "eu-west-1",
		Endpoint: r.ses.URL(), AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rp, err := resend.New(resend.Config{From: "forms@example.com", APIKey: "re_test", Endpoint: r.resend.URL(), Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.worker = outbox.NewWorker(outbox.WorkerConfig{Store: r.store, Sender: outbox.Router{Email: chain.New(sp, rp)},
		PollInterval: time.Hour, Retry: outbox.RetryPolicy{Base: time.Hour, MaxDelay: 2 * time.Hour}})
	if err := r.worker.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.worker.Stop(context.Background()) })
	return r
}

// deliver stores one email delivery, wakes the worker and waits for its first attempt.
func (r *rig) deliver(t *testing.T) (outbox.Delivery, outbox.Attempt) {
	t.Helper()
	sub := storetest.NewSubmission("contact")
	d := storetest.NewDelivery(sub, "email", "sales@example.com")
	storetest.MustAccept(t, r.store, sub, d)
	r.worker.Wake()
	return r.firstAttempt(t, d.ID)
}

func (r *rig) firstAttempt(t *testing.T, id uuid.UUID) (outbox.Delivery, outbox.Attempt) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		as, err := r.store.ListAttempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(as) > 0 {
			d, err := r.store.GetDelivery(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			return *d, as[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no attempt recorded for %s", id)
		}
		<-tick.C
	}
}

// TestFailoverTable drives one delivery per failover case of docs/design.md, 'SES' and
// 'Failover and routing' through the worker and checks what an operator reads in the
// database (status, outcome, provider on the attempt) and what each provider received.
func TestFailoverTable(t *testing.T) {
	cases := []struct {
		name        string
		ses         func(*sesfake.Server)
		resend      func(*resendfake.Server)
		status      outbox.DeliveryStatus
		outcome     outbox.Outcome
		provider    string
		sesReqs     int
		resendReqs  int
		minRetryIn  time.Duration // for failed: next attempt at least this far away
		wantErrCode string
	}{
		{name: "SES sends", status: outbox.DeliverySent, outcome: outbox.OutcomeSent, provider: "ses", sesReqs: 1},
		{name: "SES throttled, Resend sends", ses: func(s *sesfake.Server) { s.Enqueue(sesfake.Throttling()) },
			status: outbox.DeliverySent, outcome: outbox.OutcomeSent, provider: "resend", sesReqs: 1, resendReqs: 1},
		{name: "SES down, Resend sends", ses: func(s *sesfake.Server) { s.Refuse() },
			status: outbox.DeliverySent, outcome: outbox.OutcomeSent, provider: "resend", sesReqs: 0, resendReqs: 1},
		{name: "SES sending paused, Resend sends", ses: func(s *sesfake.Server) { s.Enqueue(sesfake.SendingPaused()) },
			status: outbox.DeliverySent, outcome: outbox.OutcomeSent, provider: "resend", sesReqs: 1, resendReqs: 1},
		{name: "SES sender not verified, Resend sends", ses: func(s *sesfake.Server) { s.Enqueue(sesfake.NotVerified()) },
			status: outbox.DeliverySent, outcome: outbox.OutcomeSent, provider: "resend", sesReqs: 1, resendReqs: 1},
		{name: "SES 5xx, Resend sends", ses: func(s *sesfake.Server) { s.Enqueue(sesfake.InternalError()) },
			status: outbox.DeliverySent, outcome: outbox.OutcomeSent, provider: "resend", sesReqs: 1, resendReqs: 1},
		{name: "SES rejects the message: dead, Resend never called", ses: func(s *sesfake.Server) { s.Enqueue(sesfake.Rejected()) },
			status: outbox.DeliveryDead, outcome: outbox.OutcomePermanent, provider: "ses", sesReqs: 1, wantErrCode: "MessageRejected"},
		{name: "SES bad request: dead", ses: func(s *sesfake.Server) { s.Enqueue(sesfake.BadRequest()) },
			status: outbox.DeliveryDead, outcome: outbox.OutcomePermanent, provider: "ses", sesReqs: 1, wantErrCode: "BadRequestException"},
		{name: "SES takes it and never answers: ambiguous, retried, no failover", ses: func(s *sesfake.Server) { s.Enqueue(sesfake.Reply{Hang: true}) },
			status: outbox.DeliveryFailed, outcome: outbox.OutcomeAmbiguous, provider: "ses", sesReqs: 1, minRetryIn: 30 * time.Minute, wantErrCode: "timeout"},
		{name: "both temporary: retry with Resend's Retry-After",
			ses:    func(s *sesfake.Server) { s.Enqueue(sesfake.Throttling()) },
			resend: func(s *resendfake.Server) { s.Enqueue(resendfake.RateLimited("10800")) },
			status: outbox.DeliveryFailed, outcome: outbox.OutcomeTemporary, provider: "resend", sesReqs: 1, resendReqs: 1,
			minRetryIn: 150 * time.Minute, wantErrCode: "rate_limit_exceeded"}, // past max_delay (2h +20%): Retry-After wins
		{name: "SES throttled, Resend refuses the message: dead",
			ses:    func(s *sesfake.Server) { s.Enqueue(sesfake.Throttling()) },
			resend: func(s *resendfake.Server) { s.Enqueue(resendfake.ValidationError()) },
			status: outbox.DeliveryDead, outcome: outbox.OutcomePermanent, provider: "resend", sesReqs: 1, resendReqs: 1, wantErrCode: "validation_error"},
		{name: "SES and Resend refuse the credentials: the e-mail account parks, the lead is held",
			ses: func(s *sesfake.Server) {
				s.Enqueue(sesfake.Reply{Status: 403, Type: "UnrecognizedClientException", Message: "The security token included in the request is invalid."})
			},
			resend: func(s *resendfake.Server) { s.Enqueue(resendfake.InvalidAPIKey()) },
			status: outbox.DeliveryParked, outcome: outbox.OutcomePermanent, provider: "resend", sesReqs: 1, resendReqs: 1, wantErrCode: "invalid_api_key"},
		{name: "SES refuses the credentials, Resend sends",
			ses: func(s *sesfake.Server) {
				s.Enqueue(sesfake.Reply{Status: 403, Type: "UnrecognizedClientException", Message: "The security token included in the request is invalid."})
			},
			status: outbox.DeliverySent, outcome: outbox.OutcomeSent, provider: "resend", sesReqs: 1, resendReqs: 1},
		{name: "SES throttled, Resend never answers: ambiguous",
			ses:    func(s *sesfake.Server) { s.Enqueue(sesfake.Throttling()) },
			resend: func(s *resendfake.Server) { s.Enqueue(resendfake.Reply{Hang: true}) },
			status: outbox.DeliveryFailed, outcome: outbox.OutcomeAmbiguous, provider: "resend", sesReqs: 1, resendReqs: 1, minRetryIn: 30 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.ses != nil {
				tc.ses(r.ses)
			}
			if tc.resend != nil {
				tc.resend(r.resend)
			}
			d, a := r.deliver(t)
			if d.Status != tc.status || a.Outcome != tc.outcome || a.Provider != tc.provider || d.Provider != tc.provider {
				t.Fatalf("delivery %s, attempt %s by %q (delivery provider %q), want %s, %s by %q; error %q",
					d.Status, a.Outcome, a.Provider, d.Provider, tc.status, tc.outcome, tc.provider, a.Error)
			}
			if tc.wantErrCode != "" && a.ErrorCode != tc.wantErrCode {
				t.Errorf("attempt error code %q, want %q", a.ErrorCode, tc.wantErrCode)
			}
			if got := r.ses.Count(); got != tc.sesReqs {
				t.Errorf("SES received %d requests in one attempt, want %d", got, tc.sesReqs)
			}
			if got := r.resend.Count(); got != tc.resendReqs {
				t.Errorf("Resend received %d requests, want %d", got, tc.resendReqs)
			}
			for _, req := range r.resend.Requests() {
				if req.Header.Get("Idempotency-Key") != d.ID.String() {
					t.Errorf("Resend Idempotency-Key %q, want the delivery id %s", req.Header.Get("Idempotency-Key"), d.ID)
				}
			}
			if tc.status == outbox.DeliverySent && d.ProviderMessageID == "" {
				t.Errorf("sent without a provider message id")
			}
			if tc.minRetryIn > 0 {
				if in := time.Until(d.NextAttemptAt); in < tc.minRetryIn {
					t.Errorf("next attempt in %v, want at least %v", in, tc.minRetryIn)
				}
			}
			if tc.provider == "resend" && tc.status != outbox.DeliverySent && !strings.Contains(a.Error, "ses: ") {
				t.Errorf("attempt error %q does not tell what SES answered first", a.Error)
			}
		})
	}
}

// TestVisitorInputCannotForgeHeadersOrScript posts a hostile form through intake (which
// renders the payload) and the chain to the SES fake: the subject stays one line, the
// From is the configured sender, and the HTML part carries the script as text.
func TestVisitorInputCannotForgeHeadersOrScript(t *testing.T) {
	r := newRig(t)
	cfg := intake.Config{Form: "contact", Routes: []intake.Route{{Channel: outbox.ChannelEmail, To: []string{"sales@example.com"},
		Subject: "New enquiry from {field.name}"}}}
	if err := cfg.Provision(); err != nil {
		t.Fatal(err)
	}
	form := url.Values{
		"name":     {"<script>alert(1)</script>"},
		"email":    {"visitor@example.org"},
		"message":  {"hi\r\nBcc: victim@example.net\r\n\r\n<img src=x onerror=alert(2)>"},
		"_subject": {"x\r\nBcc: victim@example.net"},
	}
	req, _ := http.NewRequest(http.MethodPost, "http://example.com/contact", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := cfg.Parse(req, time.Now())
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if _, err := outbox.AcceptOne(context.Background(), r.store, res.Submission, res.Deliveries); err != nil {
		t.Fatal(err)
	}
	r.worker.Wake()
	d, a := r.firstAttempt(t, res.Deliveries[0].ID)
	if d.Status != outbox.DeliverySent || a.Provider != "ses" {
		t.Fatalf("delivery %s by %s: %s", d.Status, a.Provider, a.Error)
	}
	sent := r.ses.Sent()
	if len(sent) != 1 {
		t.Fatalf("SES sent %d emails", len(sent))
	}
	e := sent[0].Email
	subject := e.Content.Simple.Subject.Data
	if strings.ContainsAny(subject, "\r\n") {
		t.Errorf("subject %q spans lines", subject)
	}
	if e.FromEmailAddress != "forms@example.com" || len(e.ReplyToAddresses) != 1 || e.ReplyToAddresses[0] != "visitor@example.org" {
		t.Errorf("From %q Reply-To %q", e.FromEmailAddress, e.ReplyToAddresses)
	}
	if len(e.Destination.ToAddresses) != 1 || e.Destination.ToAddresses[0] != "sales@example.com" {
		t.Errorf("To %q: a visitor must never add a recipient", e.Destination.ToAddresses)
	}
	html := e.Content.Simple.Body.Html.Data
	if strings.Contains(html, "<script") || strings.Contains(html, "<img") {
		t.Errorf("HTML part carries visitor markup:\n%s", html)
	}
	if !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("HTML part does not show the name as escaped text:\n%s", html)
	}
	if text := e.Content.Simple.Body.Text.Data; !strings.Contains(text, "<script>alert(1)</script>") {
		t.Errorf("text part lost the visitor's text:\n%s", text)
	}
}

// TestChainStopsOnShutdown: a cancelled context is not a reason to try the next provider.
func TestChainStopsOnShutdown(t *testing.T) {
	sf := sesfake.New()
	defer sf.Close()
	rf := resendfake.New()
	defer rf.Close()
	sf.Refuse()
	sp, _ := ses.New(context.Background(), ses.Config{From: "forms@example.com", Region: "eu-west-1", Endpoint: sf.URL(), AccessKeyID: "a", SecretAccessKey: "b"})
	rp, _ := resend.New(resend.Config{From: "forms@example.com", APIKey: "k", Endpoint: rf.URL()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := chain.New(sp, rp).Send(ctx, providers.Message{ID: "x", To: "a@example.com", Subject: "s", Text: "t"})
	if err == nil || rf.Count() != 0 || res.Provider != "ses" {
		t.Fatalf("err %v, resend requests %d, provider %q; want an error from ses and no failover", err, rf.Count(), res.Provider)
	}
}
