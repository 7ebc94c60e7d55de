// Package fakemarkdown reads the markdown chat services render, for the fakes that must
// tell a test what a reader would see: the visible text, what is bold, and which links
// and mentions the text makes.
package fakemarkdown

import (
	"regexp"
	"strings"
)

var (
	maskedLink = regexp.MustCompile(`^\[([^\]]*)\]\(<?(https?://[^)>]*)>?\)`)
	angled     = regexp.MustCompile(`^<(@[!&]?[0-9]+|#[0-9]+|https?://[^>]+)>`)
	everyone   = regexp.MustCompile(`^@(everyone|here)`)
)

// Read reads chat markdown (Discord's, and the Adaptive Card subset Teams renders) far
// enough to tell what visitor text could do: a backslash before punctuation shows that
// character as it is; ** toggles bold and * italic; masked links, <...> mentions and
// links and @everyone / @here count where not escaped.
func Read(s string) (visible string, bold, links, mentions []string) {
	var out, cur strings.Builder
	inBold := false
	for i := 0; i < len(s); {
		rest := s[i:]
		switch {
		case rest[0] == '\\' && len(rest) > 1 && strings.ContainsRune("\\*_~`|>#-[]()<@:.!+&", rune(rest[1])):
			out.WriteByte(rest[1])
			cur.WriteByte(rest[1])
			i += 2
		case strings.HasPrefix(rest, "**"):
			if inBold {
				bold = append(bold, cur.String())
			}
			cur.Reset()
			inBold = !inBold
			i += 2
		case rest[0] == '*': // italic: shows nothing itself
			i++
		case maskedLink.MatchString(rest):
			m := maskedLink.FindStringSubmatch(rest)
			links = append(links, m[2])
			out.WriteString(m[1])
			i += len(m[0])
		case angled.MatchString(rest):
			m := angled.FindStringSubmatch(rest)
			if strings.HasPrefix(m[1], "http") {
				links = append(links, m[1])
			} else {
				mentions = append(mentions, m[0])
			}
			out.WriteString(m[0])
			i += len(m[0])
		case everyone.MatchString(rest):
			m := everyone.FindString(rest)
			mentions = append(mentions, m)
			out.WriteString(m)
			i += len(m)
		default:
			out.WriteByte(rest[0])
			cur.WriteByte(rest[0])
			i++
		}
	}
	return out.String(), bold, links, mentions
}
