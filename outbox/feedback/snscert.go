package feedback

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// DefaultCertHost is the pattern a signing certificate's (and a SubscribeURL's) host must
// match: SNS's own regional endpoints. Anything else could be an attacker's server
// handing out a certificate for their own key.
var DefaultCertHost = regexp.MustCompile(`^sns\.[a-z0-9-]+\.amazonaws\.com$`)

// maxCertSize bounds a certificate download; SNS's are about 2 KB.
const maxCertSize = 64 << 10

// maxCachedCerts bounds the cache: SNS rotates its certificate rarely and a deployment
// sees a handful of regions.
const maxCachedCerts = 32

// certCache fetches signing certificates from allowed URLs and keeps them.
type certCache struct {
	host   *regexp.Regexp
	client *http.Client
	now    func() time.Time

	mu    sync.Mutex
	certs map[string]*x509.Certificate
}

// checkSNSURL accepts only https URLs on an allowed host, without credentials; a
// certificate URL must also name a .pem file.
func checkSNSURL(raw string, host *regexp.Regexp, pemFile bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("malformed URL: %w", err)
	}
	if u.Scheme != "https" {
		return nil, errors.New("URL is not https")
	}
	if u.User != nil || !host.MatchString(u.Hostname()) {
		return nil, fmt.Errorf("host %q is not an allowed SNS host", u.Hostname())
	}
	if pemFile && !strings.HasSuffix(u.Path, ".pem") {
		return nil, errors.New("certificate URL does not name a .pem file")
	}
	return u, nil
}

// get returns the certificate at rawURL, fetching it once. A URL outside the allowed
// hosts is refused with 401 before any request is made; a failed download is 502 so that
// SNS retries.
func (c *certCache) get(ctx context.Context, rawURL string) (*x509.Certificate, error) {
	u, err := checkSNSURL(rawURL, c.host, true)
	if err != nil {
		return nil, refuse(http.StatusUnauthorized, "signing certificate URL not allowed", err)
	}
	key := u.String()
	c.mu.Lock()
	cert, ok := c.certs[key]
	c.mu.Unlock()
	if ok && c.now().Before(cert.NotAfter) {
		return cert, nil
	}
	cert, err = c.fetch(ctx, key)
	if err != nil {
		return nil, refuse(http.StatusBadGateway, "fetch signing certificate", err)
	}
	c.mu.Lock()
	if len(c.certs) >= maxCachedCerts {
		clear(c.certs)
	}
	c.certs[key] = cert
	c.mu.Unlock()
	return cert, nil
}

func (c *certCache) fetch(ctx context.Context, u string) (*x509.Certificate, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCertSize))
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(body)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate in the answer")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	if now := c.now(); now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		return nil, errors.New("certificate is not valid now")
	}
	return cert, nil
}

// noRedirects keeps the client on the URL that passed the host check.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
