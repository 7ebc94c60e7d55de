package intake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// memLedger is an outbox.TokenLedger in memory, as both stores behave
// (outbox/storetest/tokens_cases.go); err makes every use fail, as a store outage does.
type memLedger struct {
	used map[string]string
	err  error
}

func (l *memLedger) UseToken(_ context.Context, id, hash string, _ time.Time) (bool, error) {
	if l.err != nil {
		return false, l.err
	}
	if first, ok := l.used[id]; ok {
		return first == hash, nil
	}
	l.used[id] = hash
	return true, nil
}

func timeTrapConfig(t *testing.T) (*Config, *memLedger) {
	t.Helper()
	c := contactConfig(t)
	l := &memLedger{used: map[string]string{}}
	c.Tokens = l
	return c, l
}

// tokenAt fetches a token from the form's endpoint at the given time.
func tokenAt(t *testing.T, c *Config, at time.Time) string {
	t.Helper()
	w := httptest.NewRecorder()
	c.serveToken(w, httptest.NewRequest(http.MethodGet, "/contact?form_outbox=token", nil), at)
	var a struct{ Token, Field string }
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || a.Token == "" || a.Field != FieldTimeTrap {
		t.Fatalf("token answer %d %q (%v)", w.Code, w.Body, err)
	}
	return a.Token
}

func postWithToken(t *testing.T, c *Config, token string, at time.Time, extra ...string) *outbox.Submission {
	t.Helper()
	res, err := c.Parse(postForm(form(append(append([]string{}, validContact...), append(extra, FieldTimeTrap, token)...)...)), at)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if _, ok := res.Submission.Data.Get(FieldTimeTrap); ok {
		t.Errorf("the token reached the stored data")
	}
	return res.Submission
}

func signalNames(s *outbox.Submission) []string {
	var out []string
	for _, sg := range s.Signals {
		out = append(out, sg.Name)
	}
	return out
}

func TestTimeTrapJudgesTheTokenAge(t *testing.T) {
	c, _ := timeTrapConfig(t)
	issued := testNow
	for _, tc := range []struct {
		name  string
		after time.Duration
		want  string // the one signal, or "" for none
		evid  string
	}{
		{"human pace", 40 * time.Second, "", ""},
		{"too fast", 1200 * time.Millisecond, SignalTimeTrapTooFast, "posted 1.2s after the token was issued (minimum 3s)"},
		{"expired", 25 * time.Hour, SignalTimeTrapExpired, "posted 25h0m0s after the token was issued (maximum 24h0m0s)"},
		{"issued by a clock ahead", -2 * time.Minute, SignalTimeTrapClockSkew, "the token was issued 2m0s in the future of this server's clock"},
	} {
		sub := postWithToken(t, c, tokenAt(t, c, issued), issued.Add(tc.after), "message", "note "+tc.name)
		names := strings.Join(signalNames(sub), ",")
		if names != tc.want || (tc.want != "" && sub.Signals[0].Evidence != tc.evid) {
			t.Errorf("%s: signals %+v, want %q (%s)", tc.name, sub.Signals, tc.want, tc.evid)
		}
		if sub.Status != outbox.SubmissionAccepted {
			t.Errorf("%s: %s/%s, want accepted (one medium signal never holds a post)", tc.name, sub.Status, sub.Reason)
		}
	}
}

// A forged token quarantines on its own; so does a token replayed by another post fast.
func TestTimeTrapForgedAndReusedTokens(t *testing.T) {
	c, _ := timeTrapConfig(t)
	later := testNow.Add(10 * time.Second)
	tok := tokenAt(t, c, testNow)
	id, rest, _ := strings.Cut(tok, ".")
	tampered := id + "." + strings.Replace(rest, strings.Split(rest, ".")[0], "1", 1)

	other := contactConfig(t)
	other.Form = "other"
	other.SpamKey = c.SpamKey
	for name, token := range map[string]string{
		"tampered issue time": tampered,
		"another form's":      tokenAt(t, other, testNow),
		"garbage":             "not-a-token",
	} {
		sub := postWithToken(t, c, token, later, "message", name)
		if sub.Status != outbox.SubmissionQuarantined || sub.Reason != outbox.ReasonSpamSuspected ||
			strings.Join(signalNames(sub), ",") != SignalTimeTrapForged {
			t.Errorf("%s token: %s/%s %v, want quarantined/spam_suspected by %s", name, sub.Status, sub.Reason, signalNames(sub), SignalTimeTrapForged)
		}
	}

	first := postWithToken(t, c, tok, later)
	retry := postWithToken(t, c, tok, later.Add(time.Minute))
	if len(first.Signals) != 0 || len(retry.Signals) != 0 {
		t.Errorf("first use %v and its retry %v, want no signal", signalNames(first), signalNames(retry))
	}
	replay := postWithToken(t, c, tok, testNow.Add(time.Second), "message", "buy now")
	if got := strings.Join(signalNames(replay), ","); got != SignalTimeTrapTooFast+","+SignalTimeTrapReused ||
		replay.Status != outbox.SubmissionQuarantined || replay.Reason != outbox.ReasonSpamSuspected {
		t.Errorf("replayed token, fast: %s/%s %s, want quarantined by too_fast + reused (4+3)", replay.Status, replay.Reason, got)
	}
}

// A store that cannot record the use (an outage) holds nothing against the post; a
// post without a token is a weak signal only; a refused post costs no ledger write.
func TestTimeTrapOutageMissingAndRefusedPosts(t *testing.T) {
	c, l := timeTrapConfig(t)
	l.err = errors.New("store down")
	sub := postWithToken(t, c, tokenAt(t, c, testNow), testNow.Add(time.Minute))
	if sub.Status != outbox.SubmissionAccepted || strings.Join(signalNames(sub), ",") != SignalTimeTrapUnchecked || sub.Signals[0].Weight != 0 {
		t.Errorf("ledger down: %s %+v, want accepted with a weightless %s", sub.Status, sub.Signals, SignalTimeTrapUnchecked)
	}

	c, l = timeTrapConfig(t)
	res := mustParse(t, c, postForm(form(validContact...)))
	if s := res.Submission; s.Status != outbox.SubmissionAccepted || s.Score() != 1 {
		t.Errorf("no token: %s score %d, want accepted with score 1", s.Status, s.Score())
	}
	sub = postWithToken(t, c, tokenAt(t, c, testNow), testNow.Add(time.Minute), "_gotcha", "bot")
	if sub.Status != outbox.SubmissionSpam || len(l.used) != 0 {
		t.Errorf("honeypot post: %s, %d ledger writes, want spam and none", sub.Status, len(l.used))
	}
}

func TestTokenEndpoint(t *testing.T) {
	c := contactConfig(t)
	c.AllowedOrigins = []string{"https://example.com"}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/contact?form_outbox=token", nil)
	r.Header.Set("Origin", "https://example.com")
	w := httptest.NewRecorder()
	if !c.Serve(w, r, nil, nil) || w.Code != http.StatusOK || w.Header().Get("Cache-Control") != "no-store" ||
		w.Header().Get("Access-Control-Allow-Origin") != "https://example.com" || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("token endpoint: %d %v", w.Code, w.Header())
	}
	if !strings.HasPrefix(w.Body.String(), `{"token":"`) || !strings.HasSuffix(w.Body.String(), `","field":"_form_outbox_token"}`+"\n") {
		t.Errorf("body %q", w.Body)
	}

	c.Spam.TimeTrapOff = true
	if c.Serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/contact?form_outbox=token", nil), nil, nil) {
		t.Error("a form with the time trap off answered a token request")
	}
	res := mustParse(t, c, postForm(form(validContact...)))
	if len(res.Submission.Signals) != 0 {
		t.Errorf("time trap off: signals %+v, want none", res.Submission.Signals)
	}
}
