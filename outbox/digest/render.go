package digest

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

const (
	// maxListed is the most submissions one digest e-mail shows; the count covers all
	// and the rest are in the inbox.
	maxListed = 500
	// summaryRunes bounds one submission's summary line.
	summaryRunes = 160
)

// line is one listed submission as the templates show it.
type line struct {
	N        int
	Received string
	Late     bool // created in an earlier period whose digest had been written already
	Test     bool
	Summary  string // empty for content link
	Link     string
	ID       string
}

type message struct {
	Form, Period, Inbox string
	Ledger              string // the period's lead ledger in one line, "" without
	Count, More         int
	Lines               []line
}

// render is the digest e-mail of period [start, end) listing items. The visitor's text
// appears only in the bodies, escaped by html/template in the HTML part; the subject
// holds the form's name, the count and the period, nothing a visitor typed.
func render(r Route, start, end time.Time, items []outbox.DigestItem, ledger string) (outbox.Payload, error) {
	m := message{Form: r.Form, Period: r.Schedule.Describe(start, end), Count: len(items), Ledger: ledger}
	if r.InboxURL != "" {
		m.Inbox = strings.TrimRight(r.InboxURL, "/")
	}
	for i, it := range items {
		if i == maxListed {
			m.More = len(items) - maxListed
			break
		}
		l := line{N: i + 1, Received: it.CreatedAt.In(r.Schedule.Location()).Format("2006-01-02 15:04:05"),
			Late: it.CreatedAt.Before(start), Test: it.Test, ID: it.ID.String()}
		if !r.LinkOnly {
			l.Summary = summary(it.Data)
		}
		if m.Inbox != "" {
			l.Link = m.Inbox + "/submissions/" + l.ID
		}
		m.Lines = append(m.Lines, l)
	}
	var text, html bytes.Buffer
	renderText(&text, m)
	if err := htmlTemplate.Execute(&html, m); err != nil {
		return outbox.Payload{}, fmt.Errorf("render digest: %w", err)
	}
	noun := "submissions"
	if len(items) == 1 {
		noun = "submission"
	}
	return outbox.Payload{
		Subject: fmt.Sprintf("Digest of form %s: %d %s, %s", r.Form, len(items), noun, m.Period),
		Text:    text.String(),
		HTML:    html.String(),
	}, nil
}

// summary is a submission's fields on one line, "name: value · name: value", with line
// breaks and control characters made spaces, cut to summaryRunes. Bidi controls are
// removed (internal/safetext): a name ending in U+202E would reverse the rest of the
// line, the other fields and the "open" link included.
func summary(f outbox.Fields) string {
	var b strings.Builder
	for i, fl := range f {
		if i > 0 {
			b.WriteString(" · ")
		}
		b.WriteString(safetext.StripBidi(fl.Name))
		b.WriteString(": ")
		b.WriteString(safetext.StripBidi(fl.Value))
		if utf8.RuneCountInString(b.String()) > summaryRunes {
			break
		}
	}
	s := strings.Join(strings.FieldsFunc(b.String(), func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
	}), " ")
	if utf8.RuneCountInString(s) > summaryRunes {
		s = string([]rune(s)[:summaryRunes-1]) + "…"
	}
	return s
}

// renderText is the plain-text part: the same lines as the HTML part.
func renderText(b *bytes.Buffer, m message) {
	fmt.Fprintf(b, "%d submission(s) to form %s, %s\n\n", m.Count, m.Form, m.Period)
	for _, l := range m.Lines {
		fmt.Fprintf(b, "%d. %s", l.N, l.Received)
		if l.Late {
			b.WriteString(" (late: from an earlier period)")
		}
		if l.Test {
			b.WriteString(" [test]")
		}
		if l.Summary != "" {
			b.WriteString("  " + l.Summary)
		}
		b.WriteString("\n")
		if l.Link != "" {
			b.WriteString("   " + l.Link + "\n")
		} else {
			b.WriteString("   Submission " + l.ID + "\n")
		}
	}
	if m.More > 0 {
		fmt.Fprintf(b, "\n... and %d more", m.More)
		if m.Inbox != "" {
			b.WriteString(" in the inbox: " + m.Inbox)
		}
		b.WriteString("\n")
	} else if m.Inbox != "" {
		b.WriteString("\nInbox: " + m.Inbox + "\n")
	}
	if m.Ledger != "" {
		b.WriteString("\nLead ledger (UTC days of this period): " + m.Ledger + "\n")
	}
}

var htmlTemplate = template.Must(template.New("digest").Parse(`<!DOCTYPE html>
<html><body style="font-family:sans-serif">
<p><strong>{{.Count}}</strong> submission(s) to form <strong>{{.Form}}</strong>, {{.Period}}</p>
<ol>
{{- range .Lines}}
<li><span style="color:#666">{{.Received}}{{if .Late}} (late: from an earlier period){{end}}{{if .Test}} [test]{{end}}</span>
{{- with .Summary}} <bdi>{{.}}</bdi>{{end}}
{{- if .Link}} <a href="{{.Link}}">open</a>{{else}} <span style="color:#666">{{.ID}}</span>{{end}}</li>
{{- end}}
</ol>
{{- if .More}}
<p>... and {{.More}} more{{with .Inbox}} in the <a href="{{.}}">inbox</a>{{end}}</p>
{{- else}}{{with .Inbox}}
<p><a href="{{.}}">Open the inbox</a></p>
{{- end}}{{end}}
{{- with .Ledger}}
<p style="color:#666;font-size:13px">Lead ledger (UTC days of this period): {{.}}</p>
{{- end}}
</body></html>
`))
