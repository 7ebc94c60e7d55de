package discord

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// MaxContent is Discord's limit on a message's content, in characters.
const MaxContent = 2000

// suppressEmbeds is the message flag that stops Discord from previewing links.
const suppressEmbeds = 1 << 2

var contentFormat = chat.Format{
	Escape: EscapeMarkdown,
	Length: chat.UTF16Len,
	Limit:  MaxContent,
	Note:   "\n\n*[cut to fit Discord's 2000-character limit; the whole submission is stored]*",
}

// markdownEscaper puts a backslash before every character Discord's markdown gives
// meaning to, so visitor text shows as typed: no bold, no masked [link](url), no
// <@id> mention, no @everyone, no quote or heading.
var markdownEscaper = func() *strings.Replacer {
	var pairs []string
	for _, c := range `\*_~` + "`" + `|>#-[]()<@:.` {
		pairs = append(pairs, string(c), `\`+string(c))
	}
	return strings.NewReplacer(pairs...)
}()

// EscapeMarkdown makes text inert in Discord's markdown.
func EscapeMarkdown(s string) string { return markdownEscaper.Replace(s) }

// EscapeLink makes the operator's inbox URL safe as markup: a bare link, or inside
// [label](<url>), whose angle brackets keep it from being previewed.
func EscapeLink(u string) string { return chat.MarkdownLink(u) }

type message struct {
	Content         string          `json:"content"`
	AllowedMentions allowedMentions `json:"allowed_mentions"`
	Flags           int             `json:"flags"`
}

// allowedMentions with an empty, present parse list is Discord's "ping nobody": even a
// mention that escaping missed cannot notify @everyone, a role or a user.
type allowedMentions struct {
	Parse []string `json:"parse"`
}

// Render returns the execute-webhook body for a submission: content with the form
// name, every field as a bold name and its escaped value and a footer with the id, the
// time and the inbox link when there is one, cut with a note past MaxContent;
// allowed_mentions {"parse":[]} and link previews off. It is pure, so intake renders it
// once and every retry sends these bytes.
func Render(s chat.Submission) ([]byte, error) {
	head := "**" + EscapeMarkdown(s.Title()) + "**\n"
	body := make([]chat.Part, 0, len(s.Fields))
	for _, f := range s.Fields {
		body = append(body, chat.Part{Markup: "\n**" + EscapeMarkdown(f.Name) + "**: ", Text: f.Value})
		if f.Link != "" {
			body = append(body, chat.Part{Markup: " " + EscapeMarkdown(f.Link)})
		}
	}
	tail := "\n\n*Submission " + EscapeMarkdown(s.ID) + ", received " + EscapeMarkdown(s.Received.UTC().Format(time.RFC3339)) + "*"
	if s.Link != "" {
		tail += "\n[Open in the inbox](<" + EscapeLink(s.Link) + ">)"
	}
	content, _ := contentFormat.Fit(head, body, tail)
	return encode(content)
}

// RenderText returns the execute-webhook body for an operator's `text` template
// rendered into parts: the template's markdown as written, every value escaped, cut past
// MaxContent only in values (chat.Format.FitMarkup), and the same allowed_mentions
// {"parse":[]} and link previews off as Render.
func RenderText(parts []chat.Part) ([]byte, error) {
	content, _, err := contentFormat.FitMarkup(parts)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	return encode(content)
}

func encode(content string) ([]byte, error) {
	b, err := json.Marshal(message{Content: content, AllowedMentions: allowedMentions{Parse: []string{}}, Flags: suppressEmbeds})
	if err != nil {
		return nil, fmt.Errorf("discord: encode message: %w", err)
	}
	return b, nil
}
