package intake

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/internal/jsonw"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The signed time trap (docs/caddyfile.md, "Spam signals"): GET FORM_PATH?form_outbox=token
// issues a token naming the moment and the form, HMAC-signed with the spam key; the
// browser client sends it back in the field FieldTimeTrap. A post is judged on how long
// after the issue it came, and a token is single use (outbox.TokenLedger).
const (
	// TokenQuery is the value of the form_outbox query parameter that asks for a token.
	TokenQuery = "token"
	// FieldTimeTrap carries the token in a post; like every "_" field it never reaches the
	// stored data.
	FieldTimeTrap = "_form_outbox_token"

	DefaultTimeTrapMin = 3 * time.Second
	DefaultTimeTrapMax = 24 * time.Hour

	SignalTimeTrapMissing   = "time_trap_missing"
	SignalTimeTrapTooFast   = "time_trap_too_fast"
	SignalTimeTrapExpired   = "time_trap_expired"
	SignalTimeTrapForged    = "time_trap_forged"
	SignalTimeTrapReused    = "time_trap_reused"
	SignalTimeTrapUnchecked = "time_trap_unchecked"
	SignalTimeTrapClockSkew = "time_trap_clock_skew"

	// A post without a token is a plain HTML form or a visitor without JavaScript as
	// often as a bot: weak, never spam or quarantine on its own.
	WeightTimeTrapMissing = 1
	// Faster than a person fills a form, but autofill and a pasted message are quick
	// too: not enough to quarantine alone.
	WeightTimeTrapTooFast = 4
	// A page left open overnight: weak.
	WeightTimeTrapExpired = 2
	// No browser makes a bad signature: quarantine on its own.
	WeightTimeTrapForged = 5
	// Another post used the token (a bot replaying one token); the same post retried is
	// not a reuse.
	WeightTimeTrapReused = 3
	// The store could not record the use (an outage): nothing is held against the post.
	WeightTimeTrapUnchecked = 0
	// A well-signed token from the future was issued by an instance whose clock is ahead:
	// the servers' fault, not the visitor's.
	WeightTimeTrapClockSkew = 0

	// timeTrapSkew is how far in the future an issue time may lie (another instance's
	// clock) before the token counts as forged.
	timeTrapSkew = time.Minute
	// tokenUseTimeout bounds the ledger write, so a slow store delays a post by at most
	// this much before it is judged without the reuse check.
	tokenUseTimeout = 2 * time.Second
	// tokenIDBytes of randomness name a token in the ledger.
	tokenIDBytes = 12
	// tokenMACBytes of the HMAC are kept in the token: 128 bits is beyond forging.
	tokenMACBytes = 16
)

var b64 = base64.RawURLEncoding

// timeTrapMAC signs a token's id and issue time for form. The form is signed but not
// sent: a token issued for one form is forged on another.
func (c *Config) timeTrapMAC(id, issued string) []byte {
	m := hmac.New(sha256.New, c.SpamKey)
	m.Write([]byte("form_outbox time trap\x00" + c.Form + "\x00" + id + "." + issued))
	return m.Sum(nil)[:tokenMACBytes]
}

// issueToken makes a token for this form at now: ID.ISSUED_UNIX.MAC.
func (c *Config) issueToken(now time.Time) (string, error) {
	raw := make([]byte, tokenIDBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("time trap token: %w", err)
	}
	id, issued := b64.EncodeToString(raw), strconv.FormatInt(now.Unix(), 10)
	return id + "." + issued + "." + b64.EncodeToString(c.timeTrapMAC(id, issued)), nil
}

// serveToken answers GET ?form_outbox=token: {"token": "...", "field": "_form_outbox_token"},
// never cached, with the CORS grant a post gets (a site on another origin fetches it).
// For a form with an altcha block it adds "altcha": true, which tells the browser client
// to solve a challenge; with the time trap off it then carries that member alone.
func (c *Config) serveToken(w http.ResponseWriter, r *http.Request, now time.Time) {
	c.setCORSHeaders(w, r)
	w.Header().Set("Cache-Control", "no-store")
	o := jsonw.NewObject(make([]byte, 0, 112))
	if !c.Spam.TimeTrapOff {
		tok, err := c.issueToken(now)
		if err != nil {
			http.Error(w, "no token", http.StatusInternalServerError)
			return
		}
		o.String("token", tok)
		o.String("field", FieldTimeTrap)
	}
	if c.Altcha != nil {
		o.Bool("altcha", true)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(o.Close(), '\n'))
}

// wantsToken reports whether r asks for a time-trap token.
func wantsToken(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Query().Get("form_outbox") == TokenQuery
}

// judgeTimeTrap adds the time trap's signal for the token a post carried. Only a post
// still accepted with a well-signed, unexpired token costs a ledger write: junk and
// refused posts are judged without touching the store.
func (c *Config) judgeTimeTrap(ctx context.Context, sub *outbox.Submission, token string, now time.Time) {
	s := c.Spam
	if token == "" {
		signal(sub, SignalTimeTrapMissing, WeightTimeTrapMissing, "no time-trap token (JavaScript off or a plain form post)")
		return
	}
	parts := strings.Split(token, ".")
	var issuedAt time.Time
	ok := len(parts) == 3
	if ok {
		sec, err := strconv.ParseInt(parts[1], 10, 64)
		mac, merr := b64.DecodeString(parts[2])
		ok = err == nil && merr == nil && hmac.Equal(mac, c.timeTrapMAC(parts[0], parts[1]))
		issuedAt = time.Unix(sec, 0)
	}
	age := now.Sub(issuedAt)
	switch {
	case !ok:
		signal(sub, SignalTimeTrapForged, WeightTimeTrapForged, "the token's signature does not match this form")
		return
	case age < -timeTrapSkew:
		signal(sub, SignalTimeTrapClockSkew, WeightTimeTrapClockSkew,
			fmt.Sprintf("the token was issued %s in the future of this server's clock", roundAge(-age)))
		return
	case age > time.Duration(s.TimeTrapMax):
		signal(sub, SignalTimeTrapExpired, WeightTimeTrapExpired,
			fmt.Sprintf("posted %s after the token was issued (maximum %s)", roundAge(age), time.Duration(s.TimeTrapMax)))
		return
	case age < time.Duration(s.TimeTrapMin):
		signal(sub, SignalTimeTrapTooFast, WeightTimeTrapTooFast,
			fmt.Sprintf("posted %s after the token was issued (minimum %s)", roundAge(max(age, 0)), time.Duration(s.TimeTrapMin)))
	}
	if c.Tokens == nil || sub.Status != outbox.SubmissionAccepted {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, tokenUseTimeout)
	defer cancel()
	fresh, err := c.Tokens.UseToken(ctx, "tt:"+parts[0], sub.ContentHash, issuedAt.Add(time.Duration(s.TimeTrapMax)+timeTrapSkew))
	switch {
	case err != nil:
		signal(sub, SignalTimeTrapUnchecked, WeightTimeTrapUnchecked, "the store could not record the token, so reuse was not checked")
	case !fresh:
		signal(sub, SignalTimeTrapReused, WeightTimeTrapReused, "another post already used this token")
	}
}

// roundAge shows an age to a tenth of a second below a minute, to the second above.
func roundAge(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
