package intake

import (
	"reflect"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The thresholds decide only for a post the defences accepted: below quarantine_at it
// stays accepted, from it quarantined, from spam_at spam, both with reason spam_suspected.
func TestSpamThresholdsDecideAcceptedPosts(t *testing.T) {
	s := &Spam{QuarantineAt: 3, SpamAt: 6}
	if err := s.provision(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		weights []int
		status  outbox.SubmissionStatus
		reason  string
	}{
		{nil, outbox.SubmissionAccepted, ""},
		{[]int{1, 1}, outbox.SubmissionAccepted, ""},
		{[]int{1, 2}, outbox.SubmissionQuarantined, outbox.ReasonSpamSuspected},
		{[]int{5, 0}, outbox.SubmissionQuarantined, outbox.ReasonSpamSuspected},
		{[]int{4, 2}, outbox.SubmissionSpam, outbox.ReasonSpamSuspected},
	} {
		sub := &outbox.Submission{Status: outbox.SubmissionAccepted}
		for _, w := range c.weights {
			signal(sub, "x", w, "")
		}
		s.judge(sub)
		if sub.Status != c.status || sub.Reason != c.reason {
			t.Errorf("weights %v: %s/%s, want %s/%s", c.weights, sub.Status, sub.Reason, c.status, c.reason)
		}
	}
	refused := &outbox.Submission{Status: outbox.SubmissionQuarantined, Reason: outbox.ReasonOriginRejected}
	signal(refused, SignalOriginRejected, 50, "")
	s.judge(refused)
	if refused.Status != outbox.SubmissionQuarantined || refused.Reason != outbox.ReasonOriginRejected {
		t.Errorf("a refused post was judged again: %s/%s", refused.Status, refused.Reason)
	}
}

func TestSpamThresholdsDefaultsAndChecks(t *testing.T) {
	s := &Spam{}
	if err := s.provision(); err != nil || s.QuarantineAt != 5 || s.SpamAt != 10 {
		t.Errorf("defaults %+v (%v), want 5 and 10", s, err)
	}
	if err := (&Spam{QuarantineAt: 20}).provision(); err != nil {
		t.Errorf("quarantine_at 20 alone: %v, want spam_at raised to it", err)
	}
	if err := (&Spam{QuarantineAt: 8, SpamAt: 4}).provision(); err == nil {
		t.Error("spam_at below quarantine_at accepted")
	}
}

// The defences keep their outcomes and report a signal that explains them.
func TestDefencesReportSignals(t *testing.T) {
	c := contactConfig(t)
	c.AllowedOrigins = []string{"https://example.com"}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, c, postForm(form(append(validContact, "_gotcha", "x")...)))
	want := []outbox.Signal{{Name: SignalHoneypot, Weight: WeightHoneypot, Evidence: "the hidden field _gotcha was filled"}}
	if s := res.Submission; s.Status != outbox.SubmissionSpam || s.Reason != outbox.ReasonHoneypot || !reflect.DeepEqual(s.Signals, want) {
		t.Errorf("honeypot: %s/%s %+v", s.Status, s.Reason, s.Signals)
	}

	r := postForm(form(validContact...))
	r.Header.Set("Origin", "https://evil.example")
	r.Header.Del("Referer")
	res = mustParse(t, c, r)
	missing := outbox.Signal{Name: SignalTimeTrapMissing, Weight: WeightTimeTrapMissing, Evidence: "no time-trap token (JavaScript off or a plain form post)"}
	want = []outbox.Signal{{Name: SignalOriginRejected, Weight: WeightOriginRejected, Evidence: "neither Origin nor Referer is an allowed origin"}, missing}
	if s := res.Submission; s.Status != outbox.SubmissionQuarantined || s.Reason != outbox.ReasonOriginRejected || !reflect.DeepEqual(s.Signals, want) {
		t.Errorf("origin: %s/%s %+v", s.Status, s.Reason, s.Signals)
	}

	res = mustParse(t, c, postForm(form(validContact...)))
	if s := res.Submission; s.Status != outbox.SubmissionAccepted || !reflect.DeepEqual(s.Signals, []outbox.Signal{missing}) {
		t.Errorf("post without a token: %s/%s %+v, want accepted with the weak %s only", s.Status, s.Reason, s.Signals, SignalTimeTrapMissing)
	}
}
