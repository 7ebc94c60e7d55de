package providers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// TrackWrite returns a context that notes when an HTTP request made with it has been
// written to the connection, and a func reporting whether that happened. Whether the
// request left the building decides between "nothing happened, try elsewhere" and "the
// provider may have accepted it" (Ambiguous), so every HTTP provider asks it.
func TrackWrite(ctx context.Context) (context.Context, func() bool) {
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) },
	})
	return ctx, wrote.Load
}

// NetworkError classifies an HTTP call that got no answer. Never written (refused
// connection, DNS, TLS handshake): Temporary, and another provider may be tried at once
// since this one certainly sent nothing. Written but unanswered: Ambiguous, no failover,
// because failing over could deliver the message twice. A cancelled parent context
// (shutdown) is Temporary without failover either way: nobody should start a new send.
func NetworkError(parent context.Context, wrote bool, err error) *Error {
	code := "network"
	if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		code = "timeout"
	}
	if parent.Err() != nil {
		return &Error{Class: Temporary, Code: "cancelled", Err: err}
	}
	if wrote {
		return &Error{Class: Ambiguous, Code: code, Err: err}
	}
	return &Error{Class: Temporary, Failover: true, Code: code, Err: err}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ParseRetryAfter reads a Retry-After header value, seconds or an HTTP date; 0 when it
// is absent, in the past or unusable.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// IdleConnsPerHost is how many idle keep-alive connections to one host the providers'
// default transport keeps. http.DefaultTransport keeps 2, so a worker with more sends in
// flight to one receiver (its concurrency, docs/caddyfile.md 'Global options') closed all
// but two connections after each round of sends and dialled new ones for the next: a TCP
// handshake per message and sockets piling up in TIME_WAIT. It covers the worker's
// default concurrency with room for a raised one.
const IdleConnsPerHost = 256

// NewTransport returns the providers' default HTTP transport: a clone of
// http.DefaultTransport that keeps IdleConnsPerHost idle connections per host.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = IdleConnsPerHost
	t.MaxIdleConns = max(t.MaxIdleConns, IdleConnsPerHost)
	return t
}

// NoRedirectClient returns a copy of c (or, when c is nil, a client on NewTransport) that
// never follows a redirect: following one would carry the
// message, its signature or a token in the URL somewhere nobody configured, so the 3xx
// itself is reported instead. The webhook and chat providers post with it.
func NoRedirectClient(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	} else {
		out.Transport = NewTransport()
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}

// WithoutURL drops the URL from a transport error, keeping what failed and why: a
// target URL can be a credential (a chat webhook) or carry a token in its query, and
// the error text is stored in the attempt history.
func WithoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
