package safetext

import (
	"io"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// escapeRune reports whether a terminal could act on r instead of showing it: the C0
// controls other than line feed and tab (which the CLI's tables and exports use for
// layout), DEL, and the C1 controls U+0080-U+009F (U+009B is CSI and U+009D is OSC on
// terminals that honour 8-bit controls, which is ESC [ and ESC ] in one character).
func escapeRune(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}

// appendEscaped appends the visible form of one unsafe character: \u00XX for a
// control, as JSON writes it, so that JSON passing through stays valid JSON with the
// same meaning; \xNN for a byte that is not UTF-8, which JSON never carries.
func appendEscaped(dst []byte, r rune, b byte, invalid bool) []byte {
	if invalid {
		return append(dst, '\\', 'x', hex[b>>4], hex[b&0xF])
	}
	return append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
}

// Terminal returns s with every character a terminal could act on replaced by visible
// text (see escapeRune), and every byte that is not UTF-8 shown as \xNN. Line feeds and
// tabs stay. Text without such characters comes back unchanged.
func Terminal(s string) string {
	out, _ := escape(nil, []byte(s), true)
	return string(out)
}

// escape appends p to dst with unsafe characters escaped. Unless final, an incomplete
// UTF-8 sequence at the end of p is not consumed: rest is its length, for the caller to
// complete with the next write.
func escape(dst, p []byte, final bool) (out []byte, rest int) {
	start := 0
	for i := 0; i < len(p); {
		b := p[i]
		if b < utf8.RuneSelf {
			if escapeRune(rune(b)) {
				dst = append(dst, p[start:i]...)
				dst = appendEscaped(dst, rune(b), b, false)
				start = i + 1
			}
			i++
			continue
		}
		if !final && !utf8.FullRune(p[i:]) {
			return append(dst, p[start:i]...), len(p) - i
		}
		r, size := utf8.DecodeRune(p[i:])
		invalid := r == utf8.RuneError && size == 1
		if invalid || escapeRune(r) {
			dst = append(dst, p[start:i]...)
			dst = appendEscaped(dst, r, b, invalid)
			start = i + size
		}
		i += size
	}
	return append(dst, p[start:]...), 0
}

// Writer escapes everything written through it as Terminal does, for output streamed
// to a terminal in chunks that may split a UTF-8 character. Flush writes what an
// unfinished character held back; call it when the output ends.
type Writer struct {
	w       io.Writer
	buf     []byte
	pending []byte // the start of a UTF-8 character the last Write ended inside
}

// NewWriter returns a Writer that writes escaped text to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it on. It reports len(p) written when the escaped text
// was all written, since the caller counts the bytes it gave, not the bytes shown.
func (t *Writer) Write(p []byte) (int, error) {
	in := p
	if len(t.pending) > 0 {
		in = append(t.pending, p...)
	}
	var rest int
	t.buf, rest = escape(t.buf[:0], in, false)
	t.pending = append(t.pending[:0:0], in[len(in)-rest:]...)
	if len(t.buf) == 0 {
		return len(p), nil
	}
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes, escaped, the bytes of a character the output ended inside.
func (t *Writer) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	t.buf, _ = escape(t.buf[:0], t.pending, true)
	t.pending = t.pending[:0]
	_, err := t.w.Write(t.buf)
	return err
}
