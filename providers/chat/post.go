package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// DefaultTimeout bounds one POST to a chat service, from dialling to the end of the
// answer. Past it, after the request was written, the message may have been posted, so
// the outcome is Ambiguous.
const DefaultTimeout = 15 * time.Second

// maxAnswer bounds how much of an answer is read: chat services answer in a few hundred
// bytes, and the rest would only be discarded.
const maxAnswer = 64 << 10

// Config is what every chat provider is configured with.
type Config struct {
	// Timeout bounds one request; default DefaultTimeout.
	Timeout time.Duration
	// Client sends the requests; default a client on providers.NewTransport().
	// Its CheckRedirect is replaced: redirects are never followed.
	Client *http.Client
}

// Poster posts one chat service's requests with the configured client and timeout; the
// chat providers embed it.
type Poster struct {
	timeout time.Duration
	client  *http.Client
}

// NewPoster returns a Poster for cfg.
func NewPoster(cfg Config) Poster {
	return Poster{timeout: cfg.Timeout, client: providers.NoRedirectClient(cfg.Client)}
}

// Post sends body as JSON to target; see the package function Post.
func (p Poster) Post(ctx context.Context, target string, body []byte, secrets ...string) (Answer, *providers.Error) {
	return Post(ctx, p.client, target, body, p.timeout, secrets...)
}

// Answer is a chat service's HTTP answer.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// RetryAfter is the answer's Retry-After header as a duration; 0 when absent.
func (a Answer) RetryAfter() time.Duration {
	return providers.ParseRetryAfter(a.Header.Get("Retry-After"), time.Now())
}

// Post sends body as JSON to target and reads the answer. A request that got no answer
// is classified with providers.NetworkError (Temporary when nothing was written,
// Ambiguous when it was) and its text never contains the URL nor any of secrets: chat
// webhook URLs are credentials, and the error text is stored in the attempt history.
func Post(ctx context.Context, client *http.Client, target string, body []byte, timeout time.Duration, secrets ...string) (Answer, *providers.Error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sctx, wrote := providers.TrackWrite(sctx)
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return Answer{}, &providers.Error{Class: providers.Permanent, Code: "bad_url",
			Err: Redact(errors.New("the target is not a URL"), secrets...)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "form_outbox")
	resp, err := client.Do(req)
	if err != nil {
		perr := providers.NetworkError(ctx, wrote(), err)
		perr.Err = Redact(fmt.Errorf("post: %w", providers.WithoutURL(err)), secrets...)
		return Answer{}, perr
	}
	defer resp.Body.Close()
	// A body cut short still leaves the status, which is what decides the outcome: a
	// 2xx whose body was lost is still a posted message, and the providers treat an
	// unreadable body as one without a message id or error details.
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// Redact returns an error with err's text in which every non-empty secret is replaced by
// "[redacted]". It does not wrap err, so nothing can reach the original text through
// errors.As either.
func Redact(err error, secrets ...string) error {
	msg := err.Error()
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return errors.New(msg)
}

// Refusal classifies an answer that is not a 2xx. 429 is Temporary, waiting retryAfter
// when the service said so in its body, else its Retry-After header; 408 and 5xx are
// Temporary; every other status is Permanent, because a chat or webhook that is gone,
// archived or forbidden, a revoked token or a payload the service will not take stays
// so until an operator acts, and each retry would only be refused again. detail is the
// service's own words (already free of secrets), code a short name for the history.
// Failover stays off: a chat route has one service, and nothing else to fail over to.
func Refusal(a Answer, service, code, detail string, retryAfter time.Duration) *providers.Error {
	if detail == "" {
		detail = http.StatusText(a.Status)
	}
	perr := &providers.Error{Class: providers.Permanent, HTTPStatus: a.Status, Code: code,
		Destination: providers.DestinationStatus(a.Status),
		Err:         fmt.Errorf("%s answered %d: %s", service, a.Status, detail)}
	switch {
	case a.Status == http.StatusTooManyRequests:
		perr.Class, perr.RetryAfter = providers.Temporary, retryAfter
		if perr.RetryAfter <= 0 {
			perr.RetryAfter = a.RetryAfter()
		}
	case a.Status == http.StatusRequestTimeout || a.Status >= 500:
		perr.Class = providers.Temporary
	}
	return perr
}

// OK reports whether the answer is a 2xx.
func (a Answer) OK() bool { return a.Status >= 200 && a.Status < 300 }
