package intake

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// ReasonRecipientNotPublic is the reason of an autoreply.skipped event: the visitor's
// address is not on a public DNS-style domain (publicRecipient).
const ReasonRecipientNotPublic = "recipient_not_public"

// reservedTLDs are the last labels that never name a host on the public internet: the
// special-use names of RFC 6761 (localhost, test, example, invalid), RFC 6762 (local),
// RFC 7686 (onion), RFC 9476 (alt), .arpa (infrastructure: in-addr.arpa, home.arpa of
// RFC 8375), .internal (reserved by ICANN for private use), and the names routers and
// private networks use by custom (lan, home, corp, intranet, private, localdomain).
var reservedTLDs = map[string]bool{
	"localhost": true, "test": true, "example": true, "invalid": true, "local": true,
	"onion": true, "alt": true, "arpa": true, "internal": true, "lan": true, "home": true,
	"corp": true, "intranet": true, "private": true, "localdomain": true,
}

// publicRecipient reports whether a visitor may make the operator's mail provider send
// to address: its domain must be a public DNS-style name (docs/caddyfile.md,
// "Autoreply"). The address syntax (validEmail) also takes domain literals
// (ip@[10.0.0.1]), single labels (x@localhost, a@b) and reserved names; a relay asked
// to deliver there reaches the operator's own network, one new address per host for the
// autoreply window. So: at least two labels, each 1-63 letters, digits or inner
// hyphens, at most 253 bytes, no trailing dot, a last label that is not all digits (no
// dotted IP address) and not a reserved name (reservedTLDs).
func publicRecipient(address string) bool {
	at := strings.LastIndexByte(address, '@')
	if at < 0 {
		return false
	}
	domain := strings.ToLower(address[at+1:])
	if len(domain) > 253 {
		return false
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if !validLabel(l) {
			return false
		}
	}
	tld := labels[len(labels)-1]
	return !reservedTLDs[tld] && strings.IndexFunc(tld, func(r rune) bool { return !unicode.IsDigit(r) }) >= 0
}

// validLabel is a DNS label as a host name has it (letters, digits, inner hyphens), with
// letters beyond ASCII allowed for an internationalised name written in Unicode.
func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for _, r := range l {
		if r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// markAutoreplySkipped records that no autoreply was planned and why; the address stays
// in the submission's data only, so erasing the submission leaves nothing behind.
func markAutoreplySkipped(sub *outbox.Submission, reason string, now time.Time) error {
	data, err := json.Marshal(struct {
		Route  string `json:"route"`
		Reason string `json:"reason"`
	}{AutoreplyRoute, reason})
	if err != nil {
		return fmt.Errorf("autoreply.skipped event: %w", err)
	}
	sub.Events = append(sub.Events, outbox.Event{Kind: outbox.EventAutoreplySkipped, Data: data, At: now})
	return nil
}
