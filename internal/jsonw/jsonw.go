// Package jsonw appends JSON text for the few fixed shapes written on every form post
// (stored fields and meta, the delivery payloads, the answer), without reflection and
// without the intermediate buffers of encoding/json. Its output is byte for byte what
// encoding/json writes for the same string (a test and a fuzz target hold it to that),
// so rows and bodies do not change with the encoder that wrote them.
package jsonw

import "unicode/utf8"

const hex = "0123456789abcdef"

// safe marks the ASCII bytes encoding/json copies unescaped with HTML escaping on (its
// default): printable, and none of `"`, `\`, `<`, `>` and `&`.
var safe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// String appends s as a JSON string, escaped as encoding/json.Marshal escapes it: `"` and
// `\`, \b \f \n \r \t, other control bytes and `<`, `>`, `&` as \u00XX, U+2028 and
// U+2029 as \u2028 and \u2029, and each byte of invalid UTF-8 as \ufffd.
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Verbatim reports whether String copies s unescaped. Then, String escaping rune by rune,
// every string containing s is written with s in its JSON text as well, which is what lets
// a search look for s in stored JSON before decoding it (outbox.RawSearchable). U+FFFD is
// excluded: String writes each invalid byte as \ufffd, which decodes to U+FFFD.
func Verbatim(s string) bool {
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if !safe[b] {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

// Object appends JSON objects member by member: the opening brace on the first member,
// commas between members, and the closing brace from Close.
type Object struct {
	buf  []byte
	open bool
}

// NewObject starts an object appended to dst.
func NewObject(dst []byte) Object { return Object{buf: dst} }

// Key appends the name of the next member and its colon; the caller appends the value.
func (o *Object) Key(name string) *[]byte {
	if o.open {
		o.buf = append(o.buf, ',')
	} else {
		o.buf = append(o.buf, '{')
		o.open = true
	}
	o.buf = String(o.buf, name)
	o.buf = append(o.buf, ':')
	return &o.buf
}

// String appends a member with a string value.
func (o *Object) String(name, value string) {
	p := o.Key(name)
	*p = String(*p, value)
}

// StringOmitEmpty appends a member with a string value unless the value is empty (as
// encoding/json's omitempty does).
func (o *Object) StringOmitEmpty(name, value string) {
	if value != "" {
		o.String(name, value)
	}
}

// Bool appends a member with a boolean value.
func (o *Object) Bool(name string, value bool) {
	p := o.Key(name)
	if value {
		*p = append(*p, "true"...)
	} else {
		*p = append(*p, "false"...)
	}
}

// Raw appends a member whose value is JSON text the caller vouches for.
func (o *Object) Raw(name string, value []byte) {
	p := o.Key(name)
	*p = append(*p, value...)
}

// Close appends the closing brace ("{}" when no member was written) and returns the
// whole buffer.
func (o *Object) Close() []byte {
	if !o.open {
		o.buf = append(o.buf, '{')
	}
	return append(o.buf, '}')
}
