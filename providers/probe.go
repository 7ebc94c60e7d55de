package providers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
)

// Prober is a provider that can be asked whether it would send, without sending: the
// question `caddy form-outbox check` asks each configured provider
// (docs/operations.md, "Before going live"). Probe must have no side effect a person
// could notice: no message, no post, no charge. Its error names what is wrong and never
// a secret.
type Prober interface {
	Probe(ctx context.Context) error
}

// ProbeURL checks that a webhook or chat URL's server is reachable: the name resolves, a
// TCP connection opens and, for https, the TLS handshake verifies the certificate for
// the host. It sends no HTTP request at all, because even a HEAD or OPTIONS to a webhook
// URL may run the receiver's handler (many route every method to it) and some chat
// services post on any request to the URL. So it proves the path to the receiver, not
// that the receiver accepts a post; the first delivery shows that. The error names the
// host and port, never the path or query (for Slack, Discord and Teams the URL is the
// credential).
func ProbeURL(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("not an absolute http(s) URL")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", addr, scrubDialError(err))
	}
	defer conn.Close()
	if u.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("TLS with %s: %w", addr, err)
		}
	}
	return nil
}

// scrubDialError keeps a dial error's cause; its text names the address only, which
// the caller already says.
func scrubDialError(err error) error {
	if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
		return oe.Err
	}
	return err
}
