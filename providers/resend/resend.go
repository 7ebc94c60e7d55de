// Package resend sends email through Resend (resend-go/v2). Every send carries the
// delivery id as Idempotency-Key, so a retry after an ambiguous outcome cannot make
// Resend send the message twice.
package resend

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"

	resendsdk "github.com/resend/resend-go/v2"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// DefaultRate is Resend's default API rate limit, 2 requests a second: sends are paced to
// it (providers/ratelimit) unless configured.
const DefaultRate = "2/s"

// DefaultTimeout bounds one send. Past it, after the request was written, the outcome
// is Ambiguous.
const DefaultTimeout = 30 * time.Second

// Config configures the Resend provider.
type Config struct {
	// From is the verified sender; visitors only ever reach Reply-To.
	From string
	// APIKey is the re_... key. A secret: never logged, never part of an error.
	APIKey string
	// Endpoint overrides the API base URL (a test fake); default https://api.resend.com/.
	Endpoint string
	// Timeout bounds one send; default DefaultTimeout.
	Timeout time.Duration
	// Transport carries the requests; default providers.NewTransport().
	Transport http.RoundTripper
}

// Provider sends email through Resend.
type Provider struct {
	client  *resendsdk.Client
	from    string
	timeout time.Duration
}

// New checks cfg and builds the client; it makes no request.
func New(cfg Config) (*Provider, error) {
	if _, err := mail.ParseAddress(cfg.From); err != nil || providers.CheckHeaders(providers.Message{To: cfg.From}) != nil {
		return nil, fmt.Errorf("resend: from %q is not a single email address", cfg.From)
	}
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("resend: api_key is empty")
	}
	base := cfg.Endpoint
	if base == "" {
		base = "https://api.resend.com/"
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("resend: endpoint %q is not an absolute http(s) URL", base)
	}
	// resend-go resolves "emails" against the base: without a trailing slash the last
	// path segment would be replaced.
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	rt := cfg.Transport
	if rt == nil {
		rt = providers.NewTransport()
	}
	client := resendsdk.NewCustomClient(&http.Client{Transport: statusTransport{rt}}, cfg.APIKey)
	client.BaseURL = u
	p := &Provider{client: client, from: cfg.From, timeout: cfg.Timeout}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	return p, nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return "resend" }

// Send implements providers.Provider. The header values follow providers/headers.go;
// Resend encodes and folds the Subject itself.
func (p *Provider) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	res := providers.Result{Provider: p.Name()}
	m, perr := providers.PrepareHeaders(m)
	if perr != nil {
		return res, perr
	}
	to, err := mail.ParseAddressList(m.To)
	if err != nil || len(to) == 0 {
		return res, &providers.Error{Class: providers.Permanent, Code: "bad_recipient", Err: errors.New("recipient is not an email address")}
	}
	req := &resendsdk.SendEmailRequest{From: cmp.Or(m.From, p.from), Subject: providers.APIText(m.Subject), Text: m.Text, Html: m.HTML}
	for _, a := range m.Attachments {
		req.Attachments = append(req.Attachments, &resendsdk.Attachment{Filename: a.Name, Content: a.Content, ContentType: a.ContentType})
	}
	for _, a := range to {
		req.To = append(req.To, providers.FormatAddress(a))
	}
	if m.ReplyTo != "" {
		rt, err := mail.ParseAddress(m.ReplyTo)
		if err != nil {
			return res, &providers.Error{Class: providers.Permanent, Code: "bad_reply_to", Err: errors.New("reply-to is not one email address")}
		}
		req.ReplyTo = providers.FormatAddress(rt)
	}

	sctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	sctx, wrote := providers.TrackWrite(sctx)
	var ans answer
	sctx = context.WithValue(sctx, answerKey{}, &ans)
	out, err := p.client.Emails.SendWithOptions(sctx, req, &resendsdk.SendEmailOptions{IdempotencyKey: m.ID})
	if err != nil {
		if ans.status == 0 {
			return res, providers.NetworkError(ctx, wrote(), fmt.Errorf("resend send: %w", err))
		}
		if ans.status >= 200 && ans.status < 300 {
			// Accepted, but the answer could not be read: the id is lost, the email is not.
			return res, nil
		}
		return res, classify(ans, err)
	}
	res.MessageID = out.Id
	return res, nil
}

// classify maps an HTTP error answer (docs/design.md, 'Resend'): 429 and 5xx are
// Temporary with the same key next time (Retry-After honoured); 409
// concurrent_idempotent_requests is Temporary (the first request with this key is still
// running); 400, 401, 403, 422 and the other 4xx are Permanent. 401 and 403 (a revoked
// or restricted API key, an unverified domain) are the account's failure, not the
// message's: Destination, and another provider may take the message (Failover).
func classify(a answer, err error) *providers.Error {
	perr := &providers.Error{HTTPStatus: a.status, Code: a.name, RetryAfter: a.retryAfter,
		Err: fmt.Errorf("resend send: %w", err)}
	switch {
	case a.status == http.StatusTooManyRequests || a.status >= 500 || a.status == http.StatusRequestTimeout:
		perr.Class, perr.Failover = providers.Temporary, true
	case a.status == http.StatusConflict && a.name == "concurrent_idempotent_requests":
		perr.Class = providers.Temporary
	case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
		perr.Class, perr.Destination, perr.Failover = providers.Permanent, true, true
	default:
		perr.Class = providers.Permanent
	}
	return perr
}

// answer is what statusTransport saw of the response: resend-go returns only a message
// for most errors and drops the status code this classification needs.
type answer struct {
	status     int
	name       string
	retryAfter time.Duration
}

type answerKey struct{}

// statusTransport records the status, Retry-After and error name of each response in
// the *answer its request's context carries.
type statusTransport struct{ next http.RoundTripper }

func (t statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	a, _ := r.Context().Value(answerKey{}).(*answer)
	if err != nil || a == nil {
		return resp, err
	}
	a.status = resp.StatusCode
	a.retryAfter = providers.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	if resp.StatusCode >= 400 {
		// Read the small error body once and hand resend-go an identical copy.
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if rerr == nil {
			var e struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(body, &e) == nil {
				a.name = e.Name
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}

var _ providers.Provider = (*Provider)(nil)
