package intake

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/internal/jsonw"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Proof of work compatible with ALTCHA's v1 challenges (docs/caddyfile.md, "Spam
// signals"), which the official `altcha` widget (v3 included) still solves: GET
// FORM_PATH?form_outbox=altcha answers {algorithm, challenge, maxnumber, salt, signature}
// where challenge = hex(SHA-256(salt + decimal number)) for a secret number in
// [0, maxnumber], and signature = hex(HMAC-SHA256(form key, challenge)). The widget finds
// the number and posts base64(JSON{algorithm, challenge, number, salt, signature, took})
// in the field FieldAltcha.
const (
	// AltchaQuery is the value of the form_outbox query parameter that asks for a challenge.
	AltchaQuery = "altcha"
	// FieldAltcha is the widget's field; never stored as data.
	FieldAltcha = "altcha"

	DefaultAltchaMaxNumber = 100000
	DefaultAltchaExpires   = time.Hour

	SignalAltchaPassed  = "altcha_passed"
	SignalAltchaMissing = "altcha_missing"
	SignalAltchaFailed  = "altcha_failed"
	SignalAltchaExpired = "altcha_expired"
	SignalAltchaReused  = "altcha_reused"

	// A solved challenge is kept for the record; it proves work, not a person.
	WeightAltchaPassed = 0
	// No solution: JavaScript off, a widget that did not finish, or a bot.
	WeightAltchaMissing = 2
	// A solution that does not verify is made by no widget: quarantine on its own.
	WeightAltchaFailed = 5
	// A page left open past the challenge's expiry: weak.
	WeightAltchaExpired = 2
	// Another post used this solution.
	WeightAltchaReused = 3

	altchaAlgorithm = "SHA-256"
	// maxAltchaPayload bounds the field before decoding: a real payload is about 300 bytes.
	maxAltchaPayload = 2048
)

// Altcha is the `altcha { ... }` block: a proof of work every post should carry.
type Altcha struct {
	// MaxNumber is the largest secret number, the difficulty: a browser tries half of
	// them on average. Default DefaultAltchaMaxNumber.
	MaxNumber int `json:"max_number,omitempty"`
	// Expires is how long a challenge can be solved and posted; default 1h.
	Expires Duration `json:"expires,omitempty"`
	// Required makes a post without a valid, unexpired, unused solution spam with reason
	// altcha_failed, as a failed captcha is; otherwise each of those is a signal.
	Required bool `json:"required,omitempty"`
}

// ReasonAltchaFailed is the reason of a post refused by a required proof of work.
const ReasonAltchaFailed = "altcha_failed"

func (a *Altcha) provision() error {
	if a.MaxNumber < 0 || a.Expires < 0 {
		return fmt.Errorf("altcha: max_number and expires must be positive")
	}
	if a.MaxNumber == 0 {
		a.MaxNumber = DefaultAltchaMaxNumber
	}
	if a.Expires == 0 {
		a.Expires = Duration(DefaultAltchaExpires)
	}
	return nil
}

// altchaKey is the form's own HMAC key, derived from the spam key, so a challenge issued
// for one form does not verify on another.
func (c *Config) altchaSignature(challenge string) string {
	k := hmac.New(sha256.New, c.SpamKey)
	k.Write([]byte("form_outbox altcha\x00" + c.Form))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write([]byte(challenge))
	return hex.EncodeToString(m.Sum(nil))
}

func altchaHash(salt string, number int64) string {
	sum := sha256.Sum256([]byte(salt + strconv.FormatInt(number, 10)))
	return hex.EncodeToString(sum[:])
}

// newAltchaChallenge makes a challenge expiring at now + Expires. The salt ends with "&"
// after its parameters, so no digit of the number can be moved into the salt.
func (c *Config) newAltchaChallenge(now time.Time) ([]byte, error) {
	raw := make([]byte, 12)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("altcha challenge: %w", err)
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(c.Altcha.MaxNumber)+1))
	if err != nil {
		return nil, fmt.Errorf("altcha challenge: %w", err)
	}
	salt := hex.EncodeToString(raw) + "?expires=" + strconv.FormatInt(now.Add(time.Duration(c.Altcha.Expires)).Unix(), 10) + "&"
	challenge := altchaHash(salt, n.Int64())
	o := jsonw.NewObject(make([]byte, 0, 256))
	o.String("algorithm", altchaAlgorithm)
	o.String("challenge", challenge)
	o.Raw("maxnumber", strconv.AppendInt(nil, int64(c.Altcha.MaxNumber), 10))
	o.String("salt", salt)
	o.String("signature", c.altchaSignature(challenge))
	return o.Close(), nil
}

// serveAltcha answers GET ?form_outbox=altcha with a fresh challenge, never cached, with
// the CORS grant a post gets.
func (c *Config) serveAltcha(w http.ResponseWriter, r *http.Request, now time.Time) {
	c.setCORSHeaders(w, r)
	w.Header().Set("Cache-Control", "no-store")
	body, err := c.newAltchaChallenge(now)
	if err != nil {
		http.Error(w, "no challenge", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}

func wantsAltcha(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Query().Get("form_outbox") == AltchaQuery
}

type altchaPayload struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	Number    int64  `json:"number"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// checkAltcha verifies a posted payload: the signal it earns and, for a valid one, its
// challenge and expiry for the single-use record.
func (c *Config) checkAltcha(payload string, now time.Time) (outbox.Signal, string, time.Time) {
	fail := func(why string) (outbox.Signal, string, time.Time) {
		return outbox.Signal{Name: SignalAltchaFailed, Weight: WeightAltchaFailed, Evidence: why}, "", time.Time{}
	}
	if payload == "" {
		return outbox.Signal{Name: SignalAltchaMissing, Weight: WeightAltchaMissing, Evidence: "no proof-of-work solution"}, "", time.Time{}
	}
	if len(payload) > maxAltchaPayload {
		return fail("the solution is too long")
	}
	raw, err := base64.StdEncoding.DecodeString(payload)
	var p altchaPayload
	if err != nil || json.Unmarshal(raw, &p) != nil {
		return fail("the solution is not base64 JSON")
	}
	if p.Algorithm != altchaAlgorithm {
		return fail("the solution names another algorithm")
	}
	_, query, _ := strings.Cut(p.Salt, "?")
	params, err := url.ParseQuery(query)
	expires, perr := strconv.ParseInt(params.Get("expires"), 10, 64)
	if err != nil || perr != nil {
		return fail("the challenge has no expiry")
	}
	if !hmac.Equal([]byte(p.Signature), []byte(c.altchaSignature(p.Challenge))) {
		return fail("the challenge's signature does not match this form")
	}
	if p.Number < 0 || altchaHash(p.Salt, p.Number) != p.Challenge {
		return fail("the number does not solve the challenge")
	}
	exp := time.Unix(expires, 0)
	if now.After(exp) {
		return outbox.Signal{Name: SignalAltchaExpired, Weight: WeightAltchaExpired,
			Evidence: fmt.Sprintf("posted %s after the challenge expired", roundAge(now.Sub(exp)))}, "", time.Time{}
	}
	return outbox.Signal{Name: SignalAltchaPassed, Weight: WeightAltchaPassed, Evidence: "proof of work verified"}, p.Challenge, exp
}

// judgeAltcha adds the proof of work's signal; a valid solution on a post still accepted
// is recorded as used (the one ledger write, as for the time trap). With Required, a post
// without a passing solution is spam/altcha_failed.
func (c *Config) judgeAltcha(ctx context.Context, sub *outbox.Submission, payload string, now time.Time) {
	sig, challenge, exp := c.checkAltcha(payload, now)
	if challenge != "" && c.Tokens != nil && sub.Status == outbox.SubmissionAccepted {
		ctx, cancel := context.WithTimeout(ctx, tokenUseTimeout)
		fresh, err := c.Tokens.UseToken(ctx, "pow:"+challenge, sub.ContentHash, exp.Add(timeTrapSkew))
		cancel()
		switch {
		case err != nil:
			sig.Evidence = "proof of work verified; the store could not record it, so reuse was not checked"
		case !fresh:
			sig = outbox.Signal{Name: SignalAltchaReused, Weight: WeightAltchaReused, Evidence: "another post already used this solution"}
		}
	}
	sub.Signals = append(sub.Signals, sig)
	if c.Altcha.Required && sig.Name != SignalAltchaPassed && sub.Status == outbox.SubmissionAccepted {
		sub.Status, sub.Reason = outbox.SubmissionSpam, ReasonAltchaFailed
	}
}
