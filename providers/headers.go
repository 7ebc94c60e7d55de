package providers

import (
	"errors"
	"net/mail"
	"strings"

	"golang.org/x/net/idna"

	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
)

// The rules for header values that reach a mail client live here, once, for every email
// provider: the message builder in providers/internal/mimemsg (file and SMTP) renders
// the raw header lines with FoldHeader and FoldAddresses, and the API providers
// (providers/ses, providers/resend) send the values PrepareHeaders and APIText return.

const (
	// foldAt is where header lines are folded: RFC 5322 asks for at most 78 characters
	// a line. Its hard limit is 998 octets, and SMTP's (RFC 5321) is 1,000 with CRLF;
	// every line FoldHeader and FoldAddresses write stays under foldAt unless a single
	// address is longer, and an address is at most 254 octets (intake/email.go).
	foldAt = 78
	// maxWord is RFC 2047's limit on one encoded word.
	maxWord = 75
	// maxPlainName is the longest display name written as a quoted string; a longer one
	// is encoded so it can be folded.
	maxPlainName = 60
)

// CheckHeaders rejects a message whose header values (To, Reply-To, Subject) contain a
// line break or NUL. Intake already refuses such values; checking again at send means a
// payload written by anything else (an older version, a hand edit) can never add a
// header. The error is Permanent: no retry and no other provider can make it safe.
func CheckHeaders(m Message) *Error {
	for _, h := range [...]struct{ name, v string }{{"From", m.From}, {"To", m.To}, {"Reply-To", m.ReplyTo}, {"Subject", m.Subject}} {
		if strings.ContainsAny(h.v, "\r\n\x00") {
			return &Error{Class: Permanent, Code: "header_injection",
				Err: errors.New("header " + h.name + " contains a line break; refusing to send")}
		}
	}
	return nil
}

// PrepareHeaders checks m's header values (CheckHeaders) and returns m as its headers
// may reach a mail client: bidi controls removed from To, Reply-To and Subject, and
// Reply-To as ReplyToHeader makes it (empty when the visitor's address cannot go
// there; intake keeps such an address in the body, see replyToInBody in
// intake/render.go).
func PrepareHeaders(m Message) (Message, *Error) {
	if perr := CheckHeaders(m); perr != nil {
		return m, perr
	}
	m.To = safetext.StripBidi(m.To)
	m.Subject = safetext.StripBidi(m.Subject)
	if m.ReplyTo != "" {
		list, err := mail.ParseAddressList(safetext.StripBidi(m.ReplyTo))
		if err != nil {
			return m, &Error{Class: Permanent, Code: "bad_reply_to", Err: errors.New("reply-to is not an email address")}
		}
		var kept []string
		for _, a := range list {
			if addr, ok := ReplyToHeader(a.Address); ok {
				kept = append(kept, (&mail.Address{Name: a.Name, Address: addr}).String())
			}
		}
		m.ReplyTo = strings.Join(kept, ", ")
	}
	return m, nil
}

// ReplyToHeader returns addr as it may appear in a Reply-To header, or false when it
// may not. A non-ASCII domain is written in its IDNA (xn--) form, which every client
// and server understands. A non-ASCII local part needs SMTPUTF8 (RFC 6531) all the
// way to the reader, which none of our provider paths negotiates (SES documents it
// does not support it), so such an address is left out of the header rather than
// sent raw or mangled.
func ReplyToHeader(addr string) (string, bool) {
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || !isASCII(addr[:at]) {
		return "", false
	}
	domain := addr[at+1:]
	if isASCII(domain) {
		return addr, true
	}
	ascii, err := idna.Lookup.ToASCII(domain)
	if err != nil {
		return "", false
	}
	return addr[:at+1] + ascii, true
}

// APIText returns a header value for an API provider (SES, Resend), which builds the
// header itself: unchanged, unless it contains "=?". A provider would copy such ASCII
// text as it is, and a client would then decode visitor text that looks like an
// RFC 2047 encoded word, possibly into a line break; sent as encoded words of our own,
// it decodes back to exactly the visitor's text.
func APIText(s string) string {
	if !strings.Contains(s, "=?") {
		return s
	}
	return strings.Join(encodeWords(s, maxWord), " ")
}

// FoldHeader renders an unstructured header field (Subject) for a raw message: "Name:
// value" and CRLF, folded with CRLF and a space before foldAt. Plain ASCII text is
// folded between its words; anything else (non-ASCII, controls, text that looks like an
// encoded word, a word too long to fold) becomes RFC 2047 encoded words, which a client
// decodes back to exactly value.
func FoldHeader(name, value string) string {
	if !needsEncoding(value) {
		words := strings.Split(value, " ")
		if fitsPlain(name, words) {
			return fold(name, words)
		}
	}
	// The first word shares its line with "Name: ".
	return fold(name, encodeWords(value, min(maxWord, foldAt-len(name)-2)))
}

// fitsPlain reports whether words, joined by single spaces, fold into lines under
// foldAt without changing the text: no empty word (a double, leading or trailing space
// would be lost to unfolding) and none too long for a line of its own.
func fitsPlain(name string, words []string) bool {
	if len(name)+2+len(strings.Join(words, " ")) <= foldAt {
		return true
	}
	for _, w := range words {
		if w == "" || len(w) > foldAt-1 {
			return false
		}
	}
	// The first word shares its line with "Name: ".
	return len(name)+2+len(words[0]) <= foldAt
}

// FoldAddresses renders an address header (To, Reply-To) for a raw message, folding
// between addresses and between the encoded words of a display name.
func FoldAddresses(name string, as []*mail.Address) string {
	var tokens []string
	for i, a := range as {
		// Angle brackets even without a name, as net/mail writes it.
		addr := "<" + addrSpec(a.Address) + ">"
		if a.Name != "" {
			// Only the first name shares its line with "Name: "; fold starts a new
			// line before any later one that does not fit.
			first := maxWord
			if i == 0 {
				first = min(maxWord, foldAt-len(name)-2)
			}
			tokens = append(tokens, phrase(safetext.StripBidi(a.Name), first)...)
		}
		if i < len(as)-1 {
			addr += ","
		}
		tokens = append(tokens, addr)
	}
	return fold(name, tokens)
}

// FormatAddress writes a parsed address back for an API field: bare when it has no
// display name ("a@example.com"), with the name encoded as RFC 2047 words when it has
// to be (non-ASCII, or text that looks like an encoded word).
func FormatAddress(a *mail.Address) string {
	if a.Name == "" {
		return addrSpec(a.Address)
	}
	return strings.Join(phrase(safetext.StripBidi(a.Name), maxWord), " ") + " <" + addrSpec(a.Address) + ">"
}

// addrSpec writes an address the way net/mail does (quoting a local part that needs
// it), without the angle brackets it adds.
func addrSpec(addr string) string {
	s := (&mail.Address{Address: addr}).String()
	return strings.TrimSuffix(strings.TrimPrefix(s, "<"), ">")
}

// phrase is a display name as header tokens: a quoted string when it is short plain
// ASCII, else encoded words, the first at most first characters long.
func phrase(name string, first int) []string {
	if !needsEncoding(name) && len(name) <= maxPlainName {
		s := (&mail.Address{Name: name, Address: "a@b"}).String()
		return []string{strings.TrimSuffix(s, " <a@b>")}
	}
	return encodeWords(name, first)
}

// fold writes "name:" and the tokens separated by single spaces, starting a new line
// (CRLF, space) before a token that would take the line past foldAt.
func fold(name string, tokens []string) string {
	var b strings.Builder
	b.WriteString(name + ":")
	line := len(name) + 1
	for i, t := range tokens {
		if i > 0 && line+1+len(t) > foldAt {
			b.WriteString("\r\n")
			line = 0
		}
		b.WriteString(" " + t)
		line += 1 + len(t)
	}
	b.WriteString("\r\n")
	return b.String()
}

// needsEncoding reports text that cannot go into a header as it is: non-ASCII, control
// characters, or "=?", which a client could take for the start of an encoded word.
func needsEncoding(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c >= 0x7f {
			return true
		}
	}
	return strings.Contains(s, "=?")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

const (
	wordPrefix = "=?utf-8?q?"
	wordSuffix = "?="
)

// encodeWords encodes s as RFC 2047 Q words, the first at most first characters long
// and the others at most maxWord, split between characters (never inside one, RFC 2047
// section 5). Only letters, digits and "!*+-/" stay literal, which makes each word
// valid in a Subject and in a display name alike; decoders drop the white space between
// adjacent words, so the words decode to exactly s however they are folded. Invalid
// UTF-8 (which intake refuses) becomes U+FFFD so the words stay valid.
func encodeWords(s string, first int) []string {
	var words []string
	var w strings.Builder
	size := first
	for _, r := range s {
		enc := qEncode(string(r))
		if w.Len() > 0 && len(wordPrefix)+w.Len()+len(enc)+len(wordSuffix) > size {
			words = append(words, wordPrefix+w.String()+wordSuffix)
			w.Reset()
			size = maxWord
		}
		w.WriteString(enc)
	}
	if w.Len() > 0 {
		words = append(words, wordPrefix+w.String()+wordSuffix)
	}
	return words
}

func qEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
			b = append(b, '_')
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("!*+-/", c) >= 0:
			b = append(b, c)
		default:
			b = append(b, '=', hex[c>>4], hex[c&0xf])
		}
	}
	return string(b)
}
