package webhook

import (
	"fmt"
	"net/textproto"
	"regexp"
	"strings"
)

// headerName is an HTTP field name (RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// reservedHeaders are set by Send itself: the Standard Webhooks headers a receiver
// verifies, and the framing of the request.
var reservedHeaders = map[string]bool{
	"Webhook-Id": true, "Webhook-Timestamp": true, "Webhook-Signature": true,
	"Content-Type": true, "Content-Length": true, "Host": true, "Transfer-Encoding": true,
	"Connection": true,
}

// CheckHeader rejects names that are not HTTP tokens or that the provider owns, and
// values with line breaks (which would forge further headers). The Caddyfile parser
// calls it on what the user wrote; ResolveHeaders calls it again on the resolved value.
func CheckHeader(name, value string) error {
	if !headerName.MatchString(name) {
		return fmt.Errorf("header %q: not a valid header name", name)
	}
	if reservedHeaders[textproto.CanonicalMIMEHeaderKey(name)] {
		return fmt.Errorf("header %s is set by form_outbox itself and cannot be configured", name)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("header %s: the value contains a line break", name)
	}
	return nil
}

// ResolveHeaders returns a copy of a route's headers with each value passed through
// resolve (the caller's placeholder replacement, e.g. {env.CRM_TOKEN}), checked after
// resolution: a placeholder may hold a line break the config did not show. The route's
// own map keeps what the user wrote. Names differing only in case are the same header,
// and Send would keep one of them at random, so they are refused.
func ResolveHeaders(hs map[string]string, resolve func(string) string) (map[string]string, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(hs))
	seen := make(map[string]bool, len(hs))
	for k, v := range hs {
		v = resolve(v)
		if err := CheckHeader(k, v); err != nil {
			return nil, err
		}
		ck := textproto.CanonicalMIMEHeaderKey(k)
		if seen[ck] {
			return nil, fmt.Errorf("header %s is given twice (header names ignore case)", ck)
		}
		seen[ck] = true
		out[k] = v
	}
	return out, nil
}
