package intake

import (
	"net/mail"
	"strings"
	"unicode"
)

// validEmail accepts a bare address only: no display name, no comments, no CR/LF. Such a
// value is safe to put in a Reply-To header as is, and it is what a visitor types.
func validEmail(s string) bool {
	if s == "" || len(s) > 254 || hasControl(s) || strings.ContainsAny(s, " <>\"") {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s
}

// hasControl reports control characters (CR, LF, NUL, DEL, C1 ...), which must never
// reach a header, a subject or a config name.
func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}
