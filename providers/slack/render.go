package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// MaxSectionText is Slack's limit on a section block's text, in characters.
const MaxSectionText = 3000

// sectionFormat is Slack mrkdwn in a section block.
var sectionFormat = chat.Format{
	Escape: EscapeMrkdwn,
	Length: chat.UTF16Len,
	Limit:  MaxSectionText,
	Note:   "\n\n_[cut to fit Slack's 3000-character limit; the whole submission is stored]_",
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// EscapeMrkdwn escapes the three characters Slack gives meaning to in any text: with
// them escaped a visitor can never write <!channel>, <@U123> or a <url|link>.
func EscapeMrkdwn(s string) string { return mrkdwnEscaper.Replace(s) }

// EscapeLink makes the operator's inbox URL safe inside <url|label>: escaped like text,
// and without a "|", which would end the URL and start the label.
func EscapeLink(u string) string { return EscapeMrkdwn(strings.ReplaceAll(u, "|", "%7C")) }

type message struct {
	Text        string  `json:"text"`
	Blocks      []block `json:"blocks"`
	UnfurlLinks bool    `json:"unfurl_links"`
	UnfurlMedia bool    `json:"unfurl_media"`
}

type block struct {
	Type     string `json:"type"`
	Text     *text  `json:"text,omitempty"`
	Elements []text `json:"elements,omitempty"`
}

type text struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Render returns the incoming-webhook body for a submission: text (the notification's
// one line) and blocks, a section with every field as a bold name and its escaped value
// (cut with a note past MaxSectionText) and a context line with the id, the time and
// the inbox link when there is one. Link unfurling is off so a visitor's URL shows no
// preview. It is pure, so intake renders it once and every retry sends these bytes.
func Render(s chat.Submission) ([]byte, error) {
	title := EscapeMrkdwn(s.Title())
	body := make([]chat.Part, 0, len(s.Fields))
	for _, f := range s.Fields {
		body = append(body, chat.Part{Markup: "\n*" + EscapeMrkdwn(f.Name) + "*: ", Text: f.Value})
		if f.Link != "" {
			body = append(body, chat.Part{Markup: " " + EscapeMrkdwn(f.Link)})
		}
	}
	section, _ := sectionFormat.Fit("*"+title+"*\n", body, "")
	footer := "Submission " + EscapeMrkdwn(s.ID) + ", received " + s.Received.UTC().Format(time.RFC3339)
	if s.Link != "" {
		footer += " · <" + EscapeLink(s.Link) + "|Open in the inbox>"
	}
	return encode(message{
		Text: title,
		Blocks: []block{
			{Type: "section", Text: &text{Type: "mrkdwn", Text: section}},
			{Type: "context", Elements: []text{{Type: "mrkdwn", Text: footer}}},
		},
	})
}

// RenderText returns the incoming-webhook body for an operator's `text` template
// rendered into parts: one section whose mrkdwn is the template's, every value escaped,
// cut past MaxSectionText only in values (chat.Format.FitMarkup). The top-level text,
// what a notification shows, names the form.
func RenderText(s chat.Submission, parts []chat.Part) ([]byte, error) {
	section, _, err := sectionFormat.FitMarkup(parts)
	if err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	return encode(message{Text: EscapeMrkdwn(s.Title()),
		Blocks: []block{{Type: "section", Text: &text{Type: "mrkdwn", Text: section}}}})
}

func encode(m message) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("slack: encode message: %w", err)
	}
	return b, nil
}
