package formoutbox

import (
	"fmt"
	"net/textproto"
	"regexp"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// headerName is an HTTP field name (RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// reservedWebhookHeaders are set by the webhook provider itself: the Standard Webhooks
// headers a receiver verifies, and the framing of the request.
var reservedWebhookHeaders = map[string]bool{
	"Webhook-Id": true, "Webhook-Timestamp": true, "Webhook-Signature": true,
	"Content-Type": true, "Content-Length": true, "Host": true, "Transfer-Encoding": true,
	"Connection": true,
}

// checkWebhookHeader rejects names that are not HTTP tokens or that the provider owns,
// and values with line breaks (which would forge further headers).
func checkWebhookHeader(name, value string) error {
	if !headerName.MatchString(name) {
		return fmt.Errorf("header %q: not a valid header name", name)
	}
	if reservedWebhookHeaders[textproto.CanonicalMIMEHeaderKey(name)] {
		return fmt.Errorf("header %s is set by form_outbox itself and cannot be configured", name)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("header %s: the value contains a line break", name)
	}
	return nil
}

// resolveWebhookHeaders returns a copy of a route's headers with placeholders such as
// {env.CRM_TOKEN} resolved, checked again after resolution. The route's own map keeps
// what the user wrote. Names differing only in case are the same header, and the
// provider would send one of them at random, so they are refused.
func resolveWebhookHeaders(repl *caddy.Replacer, hs map[string]string) (map[string]string, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(hs))
	seen := make(map[string]bool, len(hs))
	for k, v := range hs {
		v = repl.ReplaceKnown(v, "")
		if err := checkWebhookHeader(k, v); err != nil {
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
