// Package adminapi is the form_outbox admin API: the server (server.go, one
// http.ServeMux of method+path patterns), the JSON shapes of its answers (views.go) and
// the HTTP client `caddy form-outbox` talks to it with. It knows nothing of Caddy, so it
// tests in milliseconds: the root package's App implements Backend and mounts the server
// as Caddy's admin.api.form_outbox module, and internal/command resolves Caddy's admin
// address and hands the client a network and an address.
package adminapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Prefix is where the form_outbox routes live on Caddy's admin endpoint.
const Prefix = "/form_outbox/"

// maxErrorBody bounds how much of an error answer is read: enough for any JSON error or
// health body, not a whole export that failed half-way.
const maxErrorBody = 2 << 20

// maxMessage bounds how much of an answer that is not a JSON error becomes the message.
const maxMessage = 512

// Error is an answer of 400 or more from the admin API. Callers tell a missing record
// from a broken server by Status (errors.As), never by the text of the error.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Message is the "error" of Caddy's JSON error body ({"error": "..."}), or the start
	// of the body when it is not one, or the status text when the body is empty.
	Message string
	// Body is the answer as received. GET health answers 503 with a full health body that
	// is worth printing.
	Body []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("form_outbox admin API: HTTP %d: %s", e.Status, e.Message)
}

// newError decodes an error answer.
func newError(status int, body []byte) *Error {
	e := &Error{Status: status, Body: body}
	var j struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &j) == nil && j.Error != "" {
		e.Message = j.Error
		return e
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > maxMessage {
		msg = msg[:maxMessage] + "..."
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	e.Message = msg
	return e
}

// Client calls the form_outbox routes of one Caddy admin endpoint.
type Client struct {
	http *http.Client
	// base is the scheme and host requests are addressed to; the dialer ignores it.
	base string
	// origin is the Origin header, empty for sockets (see New).
	origin string
}

// New returns a client that reaches the admin endpoint by dialing address on network
// ("tcp", "unix", ...), as Caddy's own `caddy reload` does. Over TCP each request carries
// an Origin naming that address, because Caddy's admin endpoint refuses requests whose
// origin it does not allow; over a socket there is no host to name, so requests go to
// 127.0.0.1 without an Origin, which Caddy accepts for local sockets.
func New(network, address string) *Client {
	c := &Client{
		http: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, address)
			},
		}},
		base: "http://127.0.0.1",
	}
	if strings.HasPrefix(network, "tcp") {
		c.base = "http://" + address
		c.origin = c.base
	}
	return c
}

// Open sends one request to the route at path (below Prefix) and returns the body of a
// successful answer, which the caller must close. An answer of 400 or more is an *Error.
func (c *Client) Open(ctx context.Context, method, path string, q url.Values) (io.ReadCloser, error) {
	uri := c.base + Prefix + path
	if len(q) > 0 {
		uri += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, uri, nil)
	if err != nil {
		return nil, fmt.Errorf("admin request: %w", err)
	}
	if c.origin != "" {
		req.Header.Set("Origin", c.origin)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("form_outbox admin API: %w", err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if err != nil {
			return nil, fmt.Errorf("admin request %s %s: HTTP %d, reading the error: %w", method, Prefix+path, resp.StatusCode, err)
		}
		return nil, newError(resp.StatusCode, body)
	}
	return resp.Body, nil
}

// Call is Open for answers read whole: it returns the body of a successful answer.
func (c *Client) Call(ctx context.Context, method, path string, q url.Values) ([]byte, error) {
	body, err := c.Open(ctx, method, path, q)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("read answer of %s %s: %w", method, Prefix+path, err)
	}
	return b, nil
}
