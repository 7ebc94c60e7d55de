package intake

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func altchaConfig(t *testing.T, a *Altcha) (*Config, *memLedger) {
	t.Helper()
	c, l := timeTrapConfig(t)
	c.Altcha = a
	c.Spam.TimeTrapOff = true // judged on the proof of work alone
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	return c, l
}

type altchaChallenge struct {
	Algorithm, Challenge, Salt, Signature string
	MaxNumber                             int `json:"maxnumber"`
}

// fetchChallenge asks the endpoint for a challenge at the given time.
func fetchChallenge(t *testing.T, c *Config, at time.Time) altchaChallenge {
	t.Helper()
	w := httptest.NewRecorder()
	c.serveAltcha(w, httptest.NewRequest(http.MethodGet, "/contact?form_outbox=altcha", nil), at)
	var ch altchaChallenge
	if err := json.Unmarshal(w.Body.Bytes(), &ch); err != nil || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("challenge %d %q (%v)", w.Code, w.Body, err)
	}
	return ch
}

// solve finds the number as the widget does and encodes its payload.
func solve(t *testing.T, ch altchaChallenge) string {
	t.Helper()
	for n := int64(0); n <= int64(ch.MaxNumber); n++ {
		if altchaHash(ch.Salt, n) == ch.Challenge {
			b, _ := json.Marshal(map[string]any{"algorithm": ch.Algorithm, "challenge": ch.Challenge, "number": n,
				"salt": ch.Salt, "signature": ch.Signature, "took": 12})
			return base64.StdEncoding.EncodeToString(b)
		}
	}
	t.Fatalf("no number up to %d solves %+v", ch.MaxNumber, ch)
	return ""
}

func postAltcha(t *testing.T, c *Config, payload string, at time.Time, message string) *outbox.Submission {
	t.Helper()
	pairs := []string{"name", "Ada", "email", "ada@example.com", "message", message}
	if payload != "" {
		pairs = append(pairs, FieldAltcha, payload)
	}
	res, err := c.Parse(postForm(form(pairs...)), at)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Submission.Data.Get(FieldAltcha); ok {
		t.Error("the altcha payload reached the stored data")
	}
	return res.Submission
}

// The challenge is ALTCHA's v1 format: SHA-256, a salt ending in ?expires=UNIX&, the
// asked difficulty, and a 64-hex signature.
func TestAltchaChallengeFormat(t *testing.T) {
	c, _ := altchaConfig(t, &Altcha{MaxNumber: 500})
	ch := fetchChallenge(t, c, testNow)
	wantSuffix := "?expires=" + "1740835800" + "&" // testNow + 1h
	if ch.Algorithm != "SHA-256" || ch.MaxNumber != 500 || len(ch.Signature) != 64 || len(ch.Challenge) != 64 ||
		!strings.HasSuffix(ch.Salt, wantSuffix) || len(ch.Salt) != 24+len(wantSuffix) {
		t.Errorf("challenge %+v", ch)
	}
	// altcha-lib's own rule: challenge = hex(sha256(salt + number)).
	if got := altchaHash("abc?expires=1&", 42); got != "689d1180a58734d6422132137d4ac583afb922cae9c18591f413a11e890e897c" {
		t.Errorf("hash %s", got)
	}
}

func TestAltchaJudgesSolutions(t *testing.T) {
	c, _ := altchaConfig(t, &Altcha{MaxNumber: 300})
	at := testNow.Add(time.Minute)
	ch := fetchChallenge(t, c, testNow)
	good := solve(t, ch)

	sub := postAltcha(t, c, good, at, "first")
	if sub.Status != outbox.SubmissionAccepted || len(sub.Signals) != 1 || sub.Signals[0].Name != SignalAltchaPassed || sub.Signals[0].Weight != 0 {
		t.Errorf("solved: %s %+v, want accepted with a weightless %s", sub.Status, sub.Signals, SignalAltchaPassed)
	}
	if again := postAltcha(t, c, good, at, "first"); again.Signals[0].Name != SignalAltchaPassed {
		t.Errorf("the same post retried: %+v, want passed", again.Signals)
	}
	if reused := postAltcha(t, c, good, at, "other text"); reused.Signals[0].Name != SignalAltchaReused || reused.Status != outbox.SubmissionAccepted {
		t.Errorf("reused by another post: %s %+v, want accepted with %s", reused.Status, reused.Signals, SignalAltchaReused)
	}

	other, _ := altchaConfig(t, &Altcha{MaxNumber: 300})
	other.Form = "other"
	other.SpamKey = c.SpamKey
	var tampered map[string]any
	raw, _ := base64.StdEncoding.DecodeString(solve(t, fetchChallenge(t, c, testNow)))
	_ = json.Unmarshal(raw, &tampered)
	tampered["number"] = tampered["number"].(float64) + 1
	tb, _ := json.Marshal(tampered)
	for name, payload := range map[string]string{
		"another form's": solve(t, fetchChallenge(t, other, testNow)),
		"wrong number":   base64.StdEncoding.EncodeToString(tb),
		"garbage":        "bm90IGpzb24=",
	} {
		s := postAltcha(t, c, payload, at, name)
		if s.Signals[0].Name != SignalAltchaFailed || s.Status != outbox.SubmissionQuarantined || s.Reason != outbox.ReasonSpamSuspected {
			t.Errorf("%s: %s/%s %+v, want quarantined/spam_suspected by %s", name, s.Status, s.Reason, s.Signals, SignalAltchaFailed)
		}
	}
	late := postAltcha(t, c, solve(t, fetchChallenge(t, c, testNow)), testNow.Add(2*time.Hour), "late")
	if late.Signals[0].Name != SignalAltchaExpired || late.Status != outbox.SubmissionAccepted {
		t.Errorf("expired: %s %+v", late.Status, late.Signals)
	}
	none := postAltcha(t, c, "", at, "none")
	if none.Signals[0].Name != SignalAltchaMissing || none.Signals[0].Weight != WeightAltchaMissing || none.Status != outbox.SubmissionAccepted {
		t.Errorf("missing: %s %+v", none.Status, none.Signals)
	}
}

// With `required`, a post without a passing solution is spam/altcha_failed, as a failed
// captcha is; a solved one is accepted.
func TestAltchaRequired(t *testing.T) {
	c, _ := altchaConfig(t, &Altcha{MaxNumber: 200, Required: true})
	at := testNow.Add(time.Minute)
	if s := postAltcha(t, c, "", at, "none"); s.Status != outbox.SubmissionSpam || s.Reason != ReasonAltchaFailed {
		t.Errorf("required, missing: %s/%s", s.Status, s.Reason)
	}
	if s := postAltcha(t, c, solve(t, fetchChallenge(t, c, testNow)), at, "ok"); s.Status != outbox.SubmissionAccepted {
		t.Errorf("required, solved: %s/%s %+v", s.Status, s.Reason, s.Signals)
	}
}

// The token answer tells the browser client the form wants a proof of work.
func TestTokenAnswerAnnouncesAltcha(t *testing.T) {
	c, _ := altchaConfig(t, &Altcha{})
	w := httptest.NewRecorder()
	if !c.Serve(w, httptest.NewRequest(http.MethodGet, "/contact?form_outbox=token", nil), nil, nil) || w.Body.String() != `{"altcha":true}`+"\n" {
		t.Errorf("token answer with the time trap off: %q", w.Body)
	}
	w = httptest.NewRecorder()
	if !c.Serve(w, httptest.NewRequest(http.MethodGet, "/contact?form_outbox=altcha", nil), nil, nil) || !strings.Contains(w.Body.String(), `"algorithm":"SHA-256"`) {
		t.Errorf("challenge answer: %q", w.Body)
	}
}
