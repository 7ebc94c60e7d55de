package intake

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// normalise checks and cleans raw fields in place: names and values must be valid UTF-8
// without NUL, names must be plain (no control characters, not empty, bounded); values
// get CRLF/CR turned into LF and surrounding space trimmed, then are bounded.
//
// Repeated names (checkbox groups, or a client retrying a key) are merged into the
// first occurrence, their non-empty values joined by ", ", so nothing the visitor sent is
// lost and every name appears once in the stored data.
func (c *Config) normalise(raw outbox.Fields) (outbox.Fields, error) {
	out := make(outbox.Fields, 0, len(raw))
	index := make(map[string]int, len(raw))
	for _, f := range raw {
		if !utf8.ValidString(f.Name) || !utf8.ValidString(f.Value) {
			return nil, badRequest("fields must be valid UTF-8")
		}
		if strings.IndexByte(f.Name, 0) >= 0 || strings.IndexByte(f.Value, 0) >= 0 {
			return nil, badRequest("fields must not contain NUL characters")
		}
		name := strings.TrimSpace(f.Name)
		switch {
		case name == "":
			return nil, badRequest("a field has no name")
		case hasControl(name):
			return nil, badRequest("field names must not contain control characters")
		case utf8.RuneCountInString(name) > MaxFieldNameLength:
			return nil, badRequest("field names must be at most %d characters", MaxFieldNameLength)
		}
		value := normaliseValue(f.Value)
		// Only instructions to the service (underscore names, the honeypot, captcha
		// tokens) are refused here for length: a visitor's own field over the limit is a
		// violation (see overLength), stored quarantined and answered 422, never dropped.
		if utf8.RuneCountInString(value) > c.MaxFieldLength && c.isInstruction(name) {
			return nil, badRequest("field %q is too long (at most %d characters)", printable(name), c.MaxFieldLength)
		}
		if i, ok := index[name]; ok {
			switch {
			case value == "":
			case out[i].Value == "":
				out[i].Value = value
			default:
				out[i].Value += ", " + value
			}
			continue
		}
		index[name] = len(out)
		out = append(out, outbox.Field{Name: name, Value: value})
	}
	return out, nil
}

// isInstruction reports a field that split takes out of the visitor's data.
func (c *Config) isInstruction(name string) bool {
	return strings.HasPrefix(name, "_") || name == c.Honeypot || slices.Contains(captchaFields, name)
}

func normaliseValue(v string) string {
	v = strings.ReplaceAll(v, "\r\n", "\n")
	v = strings.ReplaceAll(v, "\r", "\n")
	return strings.TrimSpace(v)
}

// singleLine makes a visitor value fit for a header-like place (an email subject):
// line breaks become spaces and other control characters go.
func singleLine(v string) string {
	v = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case r < 0x20 || (r >= 0x7f && r < 0xa0) || r == '\u2028' || r == '\u2029':
			return -1
		}
		return r
	}, v)
	return strings.Join(strings.Fields(v), " ")
}
