// Package chat holds what the chat providers (telegram, slack, discord, teams) share: the
// submission a message is rendered from, the cut that keeps a message within a
// service's length limit, and the JSON POST whose failures are classified and stripped
// of the URL. Every chat message is rendered at intake into the exact request body and
// stored with the delivery, so a retry sends identical bytes.
package chat

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
)

// Field is one submitted field, in form order.
type Field struct {
	Name  string
	Value string
	// Link, when set, is a URL made by the configuration (a signed file link), printed
	// after the value and outside its isolate: chat services link a URL up to the next
	// space, so an isolate mark after it would become part of the link.
	Link string
}

// Submission is what a chat message is rendered from. Everything in it may have come
// from a visitor except Form and Link, and every renderer escapes all of it for its
// target.
type Submission struct {
	Form     string
	ID       string
	Received time.Time
	Fields   []Field
	// Link, when set, is where an operator reads the submission (the inbox); it comes
	// from the configuration, never from the visitor.
	Link string
	// Test marks a test submission (a `_test` post or a canary): the title says so.
	Test bool
}

// TestMark starts the title of a test submission's message, and its e-mail subject.
const TestMark = "[test] "

// Title is the message's heading, unescaped: "New submission to form NAME", after
// TestMark for a test submission.
func (s Submission) Title() string {
	if s.Test {
		return TestMark + "New submission to form " + s.Form
	}
	return "New submission to form " + s.Form
}

// Part is one piece of a message body: Markup is the renderer's own syntax, written as
// it is; Text is visitor text, escaped for the target.
type Part struct {
	Markup string
	Text   string
}

// Format describes a target's text syntax and its limit.
type Format struct {
	// Escape makes visitor text inert in the target's syntax. It must work one rune at a
	// time (escape(a+b) == escape(a)+escape(b)), which is what lets Fit cut between
	// runes and never inside an escape sequence.
	Escape func(string) string
	// Length measures rendered text in the target's units; it must be additive too.
	Length func(string) int
	// Limit is the most Length may be.
	Limit int
	// Note is appended (before the tail) when the body had to be cut, so the reader
	// knows the message is not the whole submission.
	Note string
}

// UTF16Len counts UTF-16 code units, the unit Telegram, Discord and Slack count their
// limits in (an emoji outside the basic plane counts twice).
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		// Ranging over a string never yields a surrogate: invalid bytes come as U+FFFD,
		// one unit, which is also what they are sent as.
		n += utf16.RuneLen(r)
	}
	return n
}

// value renders one visitor value whole: its bidi controls removed, escaped, and
// between FSI and PDI (internal/safetext), so that nothing in it can reorder the
// operator's text around it (a name ending in U+202E reversed the label of the link
// after it). Removing the controls keeps the Escape contract (one rune at a time), so a
// cut still falls between runes; Fit and FitMarkup always write the closing PDI. An
// empty value stays empty.
func (f Format) value(text string) string {
	text = safetext.StripBidi(text)
	if text == "" {
		return ""
	}
	return safetext.FSI + f.Escape(text) + safetext.PDI
}

// isolates is the length of the FSI and PDI around one value.
func (f Format) isolates() int { return f.Length(safetext.FSI) + f.Length(safetext.PDI) }

// Fit renders head, the body parts and tail. When the whole is longer than the limit,
// the body is cut: parts are kept in order while they fit, the last one is cut between
// runes of its visitor text (never inside an escape or the renderer's markup, and
// always with its closing PDI), and the note is added before the tail, which is always
// kept. cut reports whether that happened.
func (f Format) Fit(head string, body []Part, tail string) (text string, cut bool) {
	full := head
	for _, p := range body {
		full += p.Markup + f.value(p.Text)
	}
	full += tail
	if f.Length(full) <= f.Limit {
		return full, false
	}
	budget := f.Limit - f.Length(head) - f.Length(f.Note) - f.Length(tail)
	out := []byte(head)
parts:
	for _, p := range body {
		n := f.Length(p.Markup)
		if n > budget {
			break
		}
		out, budget = append(out, p.Markup...), budget-n
		text := safetext.StripBidi(p.Text)
		if text == "" {
			continue
		}
		if budget < f.isolates() {
			break
		}
		out, budget = append(out, safetext.FSI...), budget-f.isolates()
		for _, r := range text {
			e := f.Escape(string(r))
			n := f.Length(e)
			if n > budget {
				out = append(out, safetext.PDI...)
				break parts
			}
			out, budget = append(out, e...), budget-n
		}
		out = append(out, safetext.PDI...)
	}
	return string(out) + f.Note + tail, true
}

// FitMarkup renders an operator's template, rendered into parts: unlike Fit, every
// piece of Markup is kept, because dropping a closing tag or a list marker after a cut
// would leave markup the service refuses (Telegram answers 400 to an unclosed <b>) or
// shows broken. Only visitor text is cut, between runes, from the first value that does
// not fit onwards, and the note goes at the end. Markup that alone exceeds the limit
// is an error: the caller falls back to its built-in message. Each value is isolated
// as in Fit; a value cut to nothing is left out whole.
func (f Format) FitMarkup(parts []Part) (text string, cut bool, err error) {
	var full strings.Builder
	markup := f.Length(f.Note)
	for _, p := range parts {
		full.WriteString(p.Markup)
		full.WriteString(f.value(p.Text))
		markup += f.Length(p.Markup)
	}
	if f.Length(full.String()) <= f.Limit {
		return full.String(), false, nil
	}
	if markup > f.Limit {
		return "", false, fmt.Errorf("the template's own text is %d long, over the limit of %d", markup, f.Limit)
	}
	budget := f.Limit - markup
	var out strings.Builder
	for _, p := range parts {
		out.WriteString(p.Markup)
		text := safetext.StripBidi(p.Text)
		if text == "" {
			continue
		}
		if budget < f.isolates() {
			budget = 0
			continue
		}
		out.WriteString(safetext.FSI)
		budget -= f.isolates()
		for _, r := range text {
			e := f.Escape(string(r))
			n := f.Length(e)
			if n > budget {
				budget = 0 // nothing after the first cut value, so no value is shown half-cut in the middle
				break
			}
			out.WriteString(e)
			budget -= n
		}
		out.WriteString(safetext.PDI)
	}
	out.WriteString(f.Note)
	return out.String(), true, nil
}

var markdownLink = strings.NewReplacer(">", "%3E", ")", "%29")

// MarkdownLink makes an operator's URL safe inside markdown link syntax, [label](url)
// or [label](<url>), where ")" or ">" would end it early.
func MarkdownLink(u string) string { return markdownLink.Replace(u) }
