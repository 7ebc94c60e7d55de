package intake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Captcha providers.
const (
	CaptchaTurnstile = "turnstile"
	CaptchaHCaptcha  = "hcaptcha"
	CaptchaReCAPTCHA = "recaptcha"

	// DefaultCaptchaTimeout bounds one siteverify call.
	DefaultCaptchaTimeout = 3 * time.Second
)

// captchaProvider is what differs between the three: where to verify and the field the
// provider's widget adds to the form.
type captchaProvider struct {
	endpoint string
	field    string
}

var captchaProviders = map[string]captchaProvider{
	CaptchaTurnstile: {"https://challenges.cloudflare.com/turnstile/v0/siteverify", "cf-turnstile-response"},
	CaptchaHCaptcha:  {"https://api.hcaptcha.com/siteverify", "h-captcha-response"},
	CaptchaReCAPTCHA: {"https://www.google.com/recaptcha/api/siteverify", "g-recaptcha-response"},
}

// captchaFields are the widgets' token fields. They are never visitor content, so they
// are kept out of the stored data whether or not a captcha is configured (hCaptcha
// sends its token under both its own name and reCAPTCHA's).
var captchaFields = []string{"cf-turnstile-response", "h-captcha-response", "g-recaptcha-response"}

// Captcha is `turnstile|hcaptcha|recaptcha SECRET { timeout; endpoint; hostname }`. All
// three speak the same siteverify protocol: POST secret, response and remoteip as a
// form; JSON {"success", "hostname", "error-codes"} back.
type Captcha struct {
	Provider string `json:"provider"`
	Secret   string `json:"secret"`
	// Timeout bounds the siteverify call; default 3s. Past it the post is stored as
	// quarantined/captcha_unavailable.
	Timeout Duration `json:"timeout,omitempty"`
	// Endpoint overrides the provider's siteverify URL (tests, proxies).
	Endpoint string `json:"endpoint,omitempty"`
	// Hostnames the token must have been solved on. Default: the hosts of
	// allowed_origins; with neither, the hostname is not checked.
	Hostnames []string `json:"hostnames,omitempty"`

	// Client makes the siteverify calls; nil: a client without redirects.
	Client *http.Client `json:"-"`
}

type captchaVerdict int

const (
	captchaPassed      captchaVerdict = iota
	captchaFailed                     // missing or rejected token: spam
	captchaUnavailable                // no usable answer: quarantine, never lose the lead
)

func (cc *Captcha) provision(allowedOrigins []string) error {
	p, ok := captchaProviders[cc.Provider]
	if !ok {
		return fmt.Errorf("captcha: unknown provider %q (want turnstile, hcaptcha or recaptcha)", cc.Provider)
	}
	if cc.Secret == "" {
		return fmt.Errorf("%s: the secret is empty", cc.Provider)
	}
	if cc.Endpoint == "" {
		cc.Endpoint = p.endpoint
	}
	if u, err := url.Parse(cc.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: endpoint %q must be an absolute http(s) URL", cc.Provider, cc.Endpoint)
	}
	if cc.Timeout < 0 {
		return fmt.Errorf("%s: timeout must not be negative", cc.Provider)
	}
	if cc.Timeout == 0 {
		cc.Timeout = Duration(DefaultCaptchaTimeout)
	}
	if len(cc.Hostnames) == 0 {
		for _, o := range allowedOrigins {
			u, _ := url.Parse(o) // normalised by provisionOrigins
			cc.Hostnames = append(cc.Hostnames, u.Hostname())
		}
	}
	if cc.Client == nil {
		cc.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return nil
}

// field is the form field carrying this provider's token.
func (cc *Captcha) field() string { return captchaProviders[cc.Provider].field }

type siteverifyAnswer struct {
	Success    bool     `json:"success"`
	Hostname   string   `json:"hostname"`
	ErrorCodes []string `json:"error-codes"`
}

// verify asks the provider about token. Errors describe why the verifier was
// unavailable (for the log; they never contain the secret or the token).
func (cc *Captcha) verify(ctx context.Context, token, remoteIP string) (captchaVerdict, error) {
	if token == "" {
		return captchaFailed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cc.Timeout))
	defer cancel()
	form := url.Values{"secret": {cc.Secret}, "response": {token}}
	if remoteIP != "" {
		form.Set("remoteip", remoteIP)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cc.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return captchaUnavailable, fmt.Errorf("%s siteverify: %w", cc.Provider, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := cc.Client.Do(req)
	if err != nil {
		// *url.Error names the endpoint, never the body with the secret.
		return captchaUnavailable, fmt.Errorf("%s siteverify: %w", cc.Provider, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return captchaUnavailable, fmt.Errorf("%s siteverify: HTTP %d", cc.Provider, resp.StatusCode)
	}
	var ans siteverifyAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ans); err != nil {
		return captchaUnavailable, fmt.Errorf("%s siteverify: unreadable answer: %w", cc.Provider, err)
	}
	if !ans.Success {
		for _, code := range ans.ErrorCodes {
			// Our own misconfiguration (a wrong secret) or the provider's trouble says
			// nothing about the visitor: do not call a possibly real lead spam.
			if strings.Contains(code, "secret") || code == "internal-error" {
				return captchaUnavailable, fmt.Errorf("%s siteverify: %s", cc.Provider, code)
			}
		}
		return captchaFailed, nil
	}
	if len(cc.Hostnames) > 0 && !slices.Contains(cc.Hostnames, strings.ToLower(ans.Hostname)) {
		return captchaFailed, nil
	}
	return captchaPassed, nil
}
