package inbox

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
)

// The inbox defends its POST actions twice. First, the browser must say the request
// comes from this origin: Sec-Fetch-Site "same-origin", or else an Origin equal to the
// request's own scheme and host; a request with neither is refused, since every browser
// that can run the inbox sends at least one of them on a POST. Second, the form must
// carry the session token: a random value kept in a SameSite=Strict, HttpOnly cookie and
// repeated in every form. Basic auth has no session of its own, so the cookie is the
// session; the token needs no server secret, so it survives reloads and works across
// several Caddy instances behind one name.

const tokenCookie = "form_outbox_inbox_session"

// tokenField is the form field that carries the session token.
const tokenField = "csrf_token"

// sessionToken returns the session's token, setting the cookie when the browser has none.
func sessionToken(w http.ResponseWriter, r *http.Request, path string) string {
	if c, err := r.Cookie(tokenCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("inbox: crypto/rand failed: " + err.Error())
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	if path == "" {
		path = "/"
	}
	http.SetCookie(w, &http.Cookie{
		Name: tokenCookie, Value: tok, Path: path,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	// A POST that arrives without the cookie has no token to match: checkCSRF refuses it.
	if r.Method == http.MethodPost {
		return ""
	}
	return tok
}

// checkCSRF refuses a POST that is not same-origin or does not carry the session token.
func checkCSRF(r *http.Request, token string) error {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "same-origin":
	case "":
		origin := r.Header.Get("Origin")
		if origin == "" {
			return errors.New("the browser did not say where this request came from (no Origin or Sec-Fetch-Site header); nothing was changed")
		}
		if !sameOrigin(r, origin) {
			return errors.New("this request came from another site; nothing was changed")
		}
	default:
		return errors.New("this request came from another site; nothing was changed")
	}
	if token == "" {
		return errors.New("the form's session token is missing: reload the page and try again; nothing was changed")
	}
	// ParseForm reads at most 10 MB of body, far above any inbox form.
	got := r.PostFormValue(tokenField)
	if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
		return errors.New("the form's session token does not match: reload the page and try again; nothing was changed")
	}
	return nil
}

// sameOrigin compares hosts only: behind a proxy that ends TLS the request arrives as
// http while the browser's Origin says https, and both name this site.
func sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && u.Host == r.Host
}
