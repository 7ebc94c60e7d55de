package intake

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// fakeSiteverify speaks the siteverify protocol shared by Turnstile, hCaptcha and
// reCAPTCHA. Tokens decide the answer: "good" passes on example.com, "other-host"
// passes on evil.example, "slow" never answers before the client gives up, "boom" is
// a 502, "bad-secret" is the provider's answer to a wrong secret, anything else fails.
func fakeSiteverify(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if err := r.ParseForm(); err != nil || r.PostForm.Get("secret") != "s3cret" || r.PostForm.Get("remoteip") != "192.0.2.1" {
			t.Errorf("siteverify form %v (%v)", r.PostForm, err)
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.PostForm.Get("response") {
		case "good":
			_, _ = w.Write([]byte(`{"success":true,"hostname":"example.com","error-codes":[]}`))
		case "other-host":
			_, _ = w.Write([]byte(`{"success":true,"hostname":"evil.example"}`))
		case "slow":
			<-r.Context().Done() // the client's timeout ends this
		case "boom":
			w.WriteHeader(http.StatusBadGateway)
		case "bad-secret":
			_, _ = w.Write([]byte(`{"success":false,"error-codes":["invalid-input-secret"]}`))
		default:
			_, _ = w.Write([]byte(`{"success":false,"error-codes":["invalid-input-response"]}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestCaptchaWithFakeSiteverify(t *testing.T) {
	srv, calls := fakeSiteverify(t)
	s := openRealStore(t)
	for _, provider := range []string{CaptchaTurnstile, CaptchaHCaptcha, CaptchaReCAPTCHA} {
		tokenField := captchaProviders[provider].field
		tests := []struct {
			name   string
			token  string // "" = field absent
			status outbox.SubmissionStatus
			reason string
			calls  int32
		}{
			{"token accepted", "good", outbox.SubmissionAccepted, "", 1},
			{"token rejected", "forged", outbox.SubmissionSpam, outbox.ReasonCaptchaFailed, 1},
			{"token missing: no verifier call", "", outbox.SubmissionSpam, outbox.ReasonCaptchaFailed, 0},
			{"token solved on another site", "other-host", outbox.SubmissionSpam, outbox.ReasonCaptchaFailed, 1},
			{"verifier timeout", "slow", outbox.SubmissionQuarantined, outbox.ReasonCaptchaUnavailable, 1},
			{"verifier 502", "boom", outbox.SubmissionQuarantined, outbox.ReasonCaptchaUnavailable, 1},
			{"our secret is wrong", "bad-secret", outbox.SubmissionQuarantined, outbox.ReasonCaptchaUnavailable, 1},
		}
		for _, tt := range tests {
			t.Run(provider+"/"+tt.name, func(t *testing.T) {
				c := contactConfig(t)
				c.Form = "captcha-" + provider
				c.AllowedOrigins = []string{"https://example.com"}
				c.Captcha = &Captcha{Provider: provider, Secret: "s3cret", Endpoint: srv.URL, Timeout: Duration(200 * time.Millisecond)}
				if err := c.Provision(); err != nil {
					t.Fatal(err)
				}
				pairs := append([]string{}, validContact...)
				if tt.token != "" {
					pairs = append(pairs, tokenField, tt.token)
				}
				before := s.rows(t)
				n := calls.Load()
				start := time.Now()
				w := s.serve(t, c, postForm(form(pairs...)))
				if took := time.Since(start); took > 5*time.Second {
					t.Errorf("answer took %s: the timeout did not bound the verifier", took)
				}
				// Spam and quarantine are answered like success: the visitor is never
				// told to retry, and a real lead is kept.
				if w.Code != http.StatusSeeOther {
					t.Errorf("status %d, want 303", w.Code)
				}
				added := newRows(t, before, s.rows(t))
				if len(added) != 1 || added[0].Status != string(tt.status) || added[0].Reason != tt.reason {
					t.Fatalf("stored %+v, want one %s/%s", added, tt.status, tt.reason)
				}
				if strings.Contains(added[0].Data, "response") {
					t.Errorf("token stored in data: %s", added[0].Data)
				}
				if got := calls.Load() - n; got != tt.calls {
					t.Errorf("%d siteverify calls, want %d", got, tt.calls)
				}
			})
		}
	}
}

// A honeypot hit or a rejected origin never costs a verifier call.
func TestCaptchaNotCalledForJunk(t *testing.T) {
	srv, calls := fakeSiteverify(t)
	c := contactConfig(t)
	c.AllowedOrigins = []string{"https://example.com"}
	c.Captcha = &Captcha{Provider: CaptchaTurnstile, Secret: "s3cret", Endpoint: srv.URL}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	r := postForm(form(append([]string{"_gotcha", "x", "cf-turnstile-response", "good"}, validContact...)...))
	if res := mustParse(t, c, r); res.Submission.Reason != outbox.ReasonHoneypot {
		t.Errorf("reason %q", res.Submission.Reason)
	}
	r = postForm(form(append([]string{"cf-turnstile-response", "good"}, validContact...)...))
	r.Header.Set("Origin", "https://evil.example")
	if res := mustParse(t, c, r); res.Submission.Reason != outbox.ReasonOriginRejected {
		t.Errorf("reason %q", res.Submission.Reason)
	}
	if calls.Load() != 0 {
		t.Errorf("%d verifier calls for junk", calls.Load())
	}
}

func TestCaptchaProvisionRejects(t *testing.T) {
	for _, cc := range []Captcha{
		{Provider: "friendlycaptcha", Secret: "x"},
		{Provider: CaptchaTurnstile},
		{Provider: CaptchaTurnstile, Secret: "x", Endpoint: "ftp://x"},
	} {
		c := contactConfig(t)
		c.Captcha = &cc
		if err := c.Provision(); err == nil {
			t.Errorf("%+v provisioned", cc)
		}
	}
}
