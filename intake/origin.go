package intake

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// normaliseOrigin turns "https://Example.com/" into "https://example.com": the form
// browsers send in the Origin header. Default ports are dropped.
func normaliseOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q is not an origin like https://example.com", s)
	}
	return originOf(u), nil
}

// CheckOrigin reports what is wrong with s as an allowed_origins entry, quoting it. The
// Caddyfile parser (internal/caddyconf/caddyfile_defences.go) runs it on each entry so the error names the
// line; Provision checks the same through normaliseOrigin.
func CheckOrigin(s string) error {
	_, err := normaliseOrigin(s)
	return err
}

// originOf is scheme://host[:port] of an absolute URL, lower case, default port dropped.
func originOf(u *url.URL) string {
	host := strings.ToLower(u.Host)
	switch {
	case u.Scheme == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	case u.Scheme == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	}
	return strings.ToLower(u.Scheme) + "://" + host
}

func (c *Config) provisionOrigins() error {
	for i, o := range c.AllowedOrigins {
		n, err := normaliseOrigin(o)
		if err != nil {
			return fmt.Errorf("allowed_origins: %w", err)
		}
		c.AllowedOrigins[i] = n
	}
	return nil
}

// originAllowed checks where a post came from, when allowed_origins is set: the Origin
// header if the browser sent one, else the Referer's origin. A missing or opaque
// ("null": sandboxed frames, file: pages, some privacy redirects) origin does not pass;
// such posts are stored as quarantined/origin_rejected, never dropped.
func (c *Config) originAllowed(r *http.Request) bool {
	if len(c.AllowedOrigins) == 0 {
		return true
	}
	if o := r.Header.Get("Origin"); o != "" {
		return c.isAllowedOrigin(o)
	}
	ref, err := url.Parse(r.Header.Get("Referer"))
	if err != nil || ref.Host == "" {
		return false
	}
	return slices.Contains(c.AllowedOrigins, originOf(ref))
}

// isAllowedOrigin reports whether an Origin header value is on the allowed list.
func (c *Config) isAllowedOrigin(origin string) bool {
	if len(c.AllowedOrigins) == 0 || origin == "" || origin == "null" {
		return false
	}
	// Browsers send the origin already in normal form, so the common case needs no
	// parsing (the check runs twice per post: CORS headers and the defence).
	if slices.Contains(c.AllowedOrigins, origin) {
		return true
	}
	n, err := normaliseOrigin(origin)
	return err == nil && slices.Contains(c.AllowedOrigins, n)
}

// safeNext keeps `_next` only when following it cannot make the form an open redirect:
// a path on this site ("/thanks"), or an absolute http(s) URL on this very host or on
// an allowed origin. "//evil", "/\evil", "javascript:..." and other hosts are dropped
// (the configured redirect or the thank-you page is used instead).
func (c *Config) safeNext(v string, r *http.Request) string {
	if v == "" || len(v) > 2000 || strings.ContainsAny(v, "\\ ") || hasControl(v) {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || u.User != nil {
		return ""
	}
	if v[0] == '/' {
		if strings.HasPrefix(v, "//") || u.Scheme != "" || u.Host != "" {
			return ""
		}
		return v
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	if strings.EqualFold(u.Host, r.Host) || slices.Contains(c.AllowedOrigins, originOf(u)) {
		return v
	}
	return ""
}
