package intake

import (
	"bytes"
	"fmt"
	"strings"
	texttemplate "text/template"
	"text/template/parse"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// A chat route's `text` template is written in the target's own markup (Telegram HTML,
// Slack mrkdwn, Discord or Teams markdown), and that markup must reach the service as
// written while no value can add to it. Like html/template, parseChatTemplate appends a
// function to the pipeline of every action that prints: it wraps what the action
// printed in two private-use runes, so that after execution the output splits into the
// template's own text (chat.Part.Markup) and printed values (chat.Part.Text), which the
// provider escapes and is the only place it may cut (providers/chat/chat.go FitMarkup).
// Helpers and comparisons see the real values: the mark is added after them.
const (
	valueOpen  = "\uE000"
	valueClose = "\uE001"
	markFunc   = "_chat_value"
)

// ChatTemplateData is what a chat route's `text` template sees; like TemplateData,
// except that Link prints as a link the operator can put in the target's link syntax
// (an href, <url|label>, [label](<url>)) rather than escaped like the values.
type ChatTemplateData struct {
	Form     string
	ID       string
	Link     InboxLink
	Received time.Time
	Fields   outbox.Fields
	Files    []TemplateFile // render.go
}

// InboxLink is the inbox URL from the configuration, printed as markup made safe for
// the target's link syntax instead of as an escaped value.
type InboxLink string

// parseChatTemplate parses src as the text/template named file, with every printing
// action marked. The template text may not hold the marks itself.
func parseChatTemplate(file, src string) (*texttemplate.Template, error) {
	if i := strings.IndexAny(src, valueOpen+valueClose); i >= 0 {
		line := 1 + strings.Count(src[:i], "\n")
		return nil, fmt.Errorf("template: %s:%d: the characters U+E000 and U+E001 are reserved", file, line)
	}
	funcs := templateFuncs(nil)
	funcs[markFunc] = func(any) string { return "" }
	t, err := texttemplate.New(file).Funcs(funcs).Parse(src)
	if err != nil {
		return nil, err
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			markActions(tt.Tree.Root)
		}
	}
	return t, nil
}

// markActions appends the mark to every action under n that prints; one that only
// declares or assigns a variable prints nothing.
func markActions(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			markActions(c)
		}
	case *parse.ActionNode:
		if len(n.Pipe.Decl) == 0 {
			n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos,
				Args: []parse.Node{parse.NewIdentifier(markFunc).SetPos(n.Pos)}})
		}
	case *parse.IfNode:
		markActions(n.List)
		markActions(n.ElseList)
	case *parse.RangeNode:
		markActions(n.List)
		markActions(n.ElseList)
	case *parse.WithNode:
		markActions(n.List)
		markActions(n.ElseList)
	}
}

// unmark replaces the marks in a printed value: a value holding them would move the
// boundary between markup and text. It is built once, not per printed value.
var unmark = strings.NewReplacer(valueOpen, "\uFFFD", valueClose, "\uFFFD")

// renderChatTemplate executes t on d and splits the output into the template's markup
// and the values it printed; link makes the inbox link safe as the target's markup.
func renderChatTemplate(t *texttemplate.Template, d ChatTemplateData, link func(string) string) ([]chat.Part, error) {
	c, err := t.Clone()
	if err != nil {
		return nil, err
	}
	funcs := templateFuncs(d.Fields)
	funcs[markFunc] = func(v any) string {
		if l, ok := v.(InboxLink); ok {
			return link(string(l))
		}
		return valueOpen + unmark.Replace(fmt.Sprint(v)) + valueClose
	}
	var b bytes.Buffer
	if err := c.Funcs(funcs).Execute(&b, d); err != nil {
		return nil, err
	}
	var parts []chat.Part
	out := b.String()
	for out != "" {
		i := strings.Index(out, valueOpen)
		if i < 0 {
			parts = append(parts, chat.Part{Markup: out})
			break
		}
		j := strings.Index(out[i:], valueClose)
		parts = append(parts, chat.Part{Markup: out[:i], Text: out[i+len(valueOpen) : i+j]})
		out = out[i+j+len(valueClose):]
	}
	return parts, nil
}
