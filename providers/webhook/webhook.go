// Package webhook delivers submissions as signed JSON POSTs following the Standard
// Webhooks specification (https://www.standardwebhooks.com): the receiver can verify
// the sender and deduplicate retries by webhook-id.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// DefaultTimeout bounds one POST, from dialling to the end of the response headers.
const DefaultTimeout = 15 * time.Second

// SecretPrefix starts every Standard Webhooks signing secret.
const SecretPrefix = "whsec_"

// Config configures the webhook provider.
type Config struct {
	// Secret returns the signing secret (whsec_<base64>) for a target URL; "" sends the
	// request unsigned. Secrets live in the config, never in stored payloads.
	Secret func(url string) string
	// Headers returns extra headers for a target URL (e.g. an Authorization the receiver
	// expects); nil or an empty map adds none. They cannot replace the Standard Webhooks
	// headers or Content-Type, which are set after them. Values may be secrets: they live
	// in the config, never in stored payloads or logs.
	Headers func(url string) map[string]string
	// Timeout bounds one request; default 15s. Past it, an answer may still have been
	// processed by the receiver, so a timeout is Ambiguous.
	Timeout time.Duration
	// Client sends the requests; default a client on providers.NewTransport().
	// Its CheckRedirect is replaced: redirects are never followed.
	Client *http.Client
	// Now stamps webhook-timestamp; default time.Now.
	Now func() time.Time
	// UserAgent; default "form_outbox".
	UserAgent string
}

// Provider POSTs webhook messages.
type Provider struct {
	cfg    Config
	client *http.Client
}

// New returns a webhook provider.
func New(cfg Config) *Provider {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "form_outbox"
	}
	// Following a redirect would send the signed body somewhere the operator never
	// configured; the 3xx itself is reported instead.
	return &Provider{cfg: cfg, client: providers.NoRedirectClient(cfg.Client)}
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return "webhook" }

// Sign returns the webhook-signature header value for one request: "v1," followed by the
// base64 HMAC-SHA256 of "id.timestamp.body", keyed by the decoded secret.
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := DecodeSecret(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// DecodeSecret returns the key bytes of a whsec_ secret. The prefix is optional, as in
// the reference implementations.
func DecodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || len(key) == 0 {
		return nil, errors.New("webhook secret is not a whsec_ secret with a base64 key")
	}
	return key, nil
}

// Send implements providers.Provider.
func (p *Provider) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	res := providers.Result{Provider: p.Name()}
	u, err := url.Parse(m.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return res, &providers.Error{Class: providers.Permanent, Code: "bad_url",
			Err: errors.New("webhook target is not an absolute http(s) URL")}
	}
	ts := p.cfg.Now().Unix()
	var sig string
	if p.cfg.Secret != nil {
		if secret := p.cfg.Secret(m.URL); secret != "" {
			if sig, err = Sign(secret, m.ID, ts, m.Body); err != nil {
				return res, &providers.Error{Class: providers.Permanent, Code: "bad_secret", Err: err}
			}
		}
	}

	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	// Whether the request left the building decides between "retry, nothing happened"
	// and "may have been received".
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return res, &providers.Error{Class: providers.Permanent, Code: "bad_request", Err: err}
	}
	if p.cfg.Headers != nil {
		for k, v := range p.cfg.Headers(m.URL) {
			req.Header.Set(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", p.cfg.UserAgent)
	}
	req.Header.Set("webhook-id", m.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	if sig != "" {
		req.Header.Set("webhook-signature", sig)
	}

	resp, err := p.client.Do(req)
	if err != nil {
		class := providers.Temporary
		if wrote.Load() {
			class = providers.Ambiguous
		}
		code := "network"
		if errors.Is(err, context.DeadlineExceeded) {
			code = "timeout"
		}
		return res, &providers.Error{Class: class, Code: code, Err: fmt.Errorf("post webhook: %w", providers.WithoutURL(err))}
	}
	defer resp.Body.Close()
	// Drain a little so the connection can be reused; the body itself is not needed.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	res.MessageID = m.ID
	return res, classifyStatus(resp)
}

// classifyStatus maps the receiver's answer: 2xx sent; 408 and 429 and 5xx temporary
// (honouring Retry-After); 410 Gone and other 4xx permanent; 3xx permanent because
// redirects are not followed. A redirect, 401, 403, 404 and 410 are the destination's
// failures (providers.Error.Destination): the URL or its credentials are wrong for every
// message, so the outbox parks the URL instead of killing each lead; another 4xx (400,
// 422) is about this message only.
func classifyStatus(resp *http.Response) error {
	s := resp.StatusCode
	switch {
	case s >= 200 && s < 300:
		return nil
	case s >= 300 && s < 400:
		return &providers.Error{Class: providers.Permanent, Code: "redirect", HTTPStatus: s, Destination: true,
			Err: fmt.Errorf("webhook answered with a redirect to %q; redirects are not followed, configure the final URL", resp.Header.Get("Location"))}
	case s == http.StatusGone:
		return &providers.Error{Class: providers.Permanent, Code: "gone", HTTPStatus: s, Destination: true,
			Err: errors.New("webhook receiver says the endpoint is gone")}
	case s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500:
		return &providers.Error{Class: providers.Temporary, HTTPStatus: s,
			RetryAfter: providers.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
			Err:        fmt.Errorf("webhook receiver answered %s", resp.Status)}
	case s >= 400:
		return &providers.Error{Class: providers.Permanent, HTTPStatus: s, Destination: providers.DestinationStatus(s),
			Err: fmt.Errorf("webhook receiver refused the request: %s", resp.Status)}
	default:
		return &providers.Error{Class: providers.Temporary, HTTPStatus: s,
			Err: fmt.Errorf("unexpected webhook answer %s", resp.Status)}
	}
}

var _ providers.Provider = (*Provider)(nil)
