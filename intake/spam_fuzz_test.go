package intake

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// FuzzSpamTokens feeds arbitrary time-trap tokens and ALTCHA payloads to their judges.
// Whatever a client posts, they must not panic, must add exactly one signal each with
// one of their documented names, and never call a made-up value a pass.
func FuzzSpamTokens(f *testing.F) {
	f.Add("abc.1740832200.def", "eyJhbGdvcml0aG0iOiJTSEEtMjU2In0=")
	f.Add("", "")
	f.Add("..", "bnVsbA==")
	f.Add("a.-99999999999999999999.b", "eyJudW1iZXIiOi0xLCJzYWx0IjoiP2V4cGlyZXM9OTk5OTk5OTk5OTkmIn0=")
	c := contactConfig(f)
	c.Altcha = &Altcha{MaxNumber: 10}
	c.Tokens = &memLedger{used: map[string]string{}}
	if err := c.Provision(); err != nil {
		f.Fatal(err)
	}
	timeTrap := map[string]bool{SignalTimeTrapMissing: true, SignalTimeTrapTooFast: true, SignalTimeTrapExpired: true,
		SignalTimeTrapForged: true, SignalTimeTrapClockSkew: true}
	pow := map[string]bool{SignalAltchaMissing: true, SignalAltchaFailed: true}
	f.Fuzz(func(t *testing.T, token, payload string) {
		sub := &outbox.Submission{Status: outbox.SubmissionAccepted, ContentHash: "h"}
		c.judgeTimeTrap(t.Context(), sub, token, testNow)
		c.judgeAltcha(t.Context(), sub, payload, testNow)
		if len(sub.Signals) != 2 || !timeTrap[sub.Signals[0].Name] || !pow[sub.Signals[1].Name] {
			t.Fatalf("token %q, payload %q: signals %+v", token, payload, sub.Signals)
		}
	})
}

// freshLedger records nothing: every use is a first one (the store's cost is not intake's).
type freshLedger struct{}

func (freshLedger) UseToken(context.Context, string, string, time.Time) (bool, error) {
	return true, nil
}

// BenchmarkParseSpamSignals is the intake cost of the signals: the same post parsed with
// the time trap off and no proof of work, with a valid time-trap token, and with a token
// and an ALTCHA solution (the store's write for single use excluded).
func BenchmarkParseSpamSignals(b *testing.B) {
	for _, bc := range []struct {
		name         string
		trap, altcha bool
	}{{"off", false, false}, {"time_trap", true, false}, {"time_trap+altcha", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			c := contactConfig(b)
			c.Tokens = freshLedger{}
			c.Spam = &Spam{TimeTrapOff: !bc.trap}
			if bc.altcha {
				c.Altcha = &Altcha{MaxNumber: 50}
			}
			if err := c.Provision(); err != nil {
				b.Fatal(err)
			}
			c.DedupeOff, c.recent = true, nil
			pairs := append([]string{}, validContact...)
			if bc.trap {
				tok, err := c.issueToken(testNow.Add(-time.Minute))
				if err != nil {
					b.Fatal(err)
				}
				pairs = append(pairs, FieldTimeTrap, tok)
			}
			if bc.altcha {
				ch, err := c.newAltchaChallenge(testNow)
				if err != nil {
					b.Fatal(err)
				}
				var a altchaChallenge
				if err := json.Unmarshal(ch, &a); err != nil {
					b.Fatal(err)
				}
				pairs = append(pairs, FieldAltcha, solveB(b, a))
			}
			body := form(pairs...)
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.Parse(postForm(body), testNow)
				if err != nil || res.Submission.Status != outbox.SubmissionAccepted {
					b.Fatalf("%v %+v", err, res.Submission.Signals)
				}
			}
		})
	}
}

func solveB(b *testing.B, ch altchaChallenge) string {
	for n := int64(0); n <= int64(ch.MaxNumber); n++ {
		if altchaHash(ch.Salt, n) == ch.Challenge {
			p, _ := json.Marshal(altchaPayload{Algorithm: ch.Algorithm, Challenge: ch.Challenge, Number: n, Salt: ch.Salt, Signature: ch.Signature})
			return base64.StdEncoding.EncodeToString(p)
		}
	}
	b.Fatal("unsolved")
	return ""
}
