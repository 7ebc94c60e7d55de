package safetext

import (
	"fmt"
	"strings"
)

// The isolate that brackets a visitor's value where it meets the operator's text:
// FIRST STRONG ISOLATE takes the value's direction from its own first strong letter,
// POP DIRECTIONAL ISOLATE ends it, and between them nothing the value holds can change
// the order of what follows it (Unicode Bidirectional Algorithm, UAX #9). Outside the
// pair, the paragraph's direction is found as if the value were one neutral character.
const (
	FSI = "\u2068"
	PDI = "\u2069"
)

// IsBidiControl reports the embedding, override and isolate controls (U+202A-U+202E,
// U+2066-U+2069): the characters that make text run in another order than it was
// written, past the end of the value that holds them. The marks (U+200E, U+200F,
// U+061C) only steer the characters next to them, and stay.
func IsBidiControl(r rune) bool {
	return (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069')
}

// StripBidi removes the bidi controls (IsBidiControl). In a Subject, a chat message or
// an HTML body they let a visitor make what a reader sees run in another order than
// what was sent: a name ending in U+202E reverses the operator's text after it. Text
// without them comes back unchanged, without copying.
func StripBidi(s string) string {
	if !strings.ContainsFunc(s, IsBidiControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if IsBidiControl(r) {
			return -1
		}
		return r
	}, s)
}

// Isolate returns s, its bidi controls removed, between FSI and PDI; "" for a value
// that is empty then, so an absent field still prints nothing. The controls go first
// because a PDI inside would close the isolate early and let an override after it run
// on.
func Isolate(s string) string {
	s = StripBidi(s)
	if s == "" {
		return ""
	}
	return FSI + s + PDI
}

// invisible reports the characters a reader cannot see: the zero-width space,
// non-joiner and joiner (U+200B-U+200D), the word joiner (U+2060) and the zero-width
// no-break space (U+FEFF), and the bidi controls, which show nothing themselves but
// reorder what follows. Two names that differ only by them look the same.
func invisible(r rune) bool {
	return (r >= '\u200b' && r <= '\u200d') || r == '\u2060' || r == '\ufeff' || IsBidiControl(r)
}

// ShowInvisible returns s with every invisible character written as a marked escape,
// ⟨U+200B⟩, so an operator reading a submission sees that it is there (and that
// "Ada" and "Ad⟨U+200B⟩a" are not the same name). Text without them comes back
// unchanged, without copying.
func ShowInvisible(s string) string {
	if !strings.ContainsFunc(s, invisible) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if invisible(r) {
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
