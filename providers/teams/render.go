package teams

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// MaxText bounds the card's field text, in bytes of its JSON encoding: Teams refuses a
// message over about 28 KB, and the rest of the card stays well under the 4 KB left.
const MaxText = 24000

var textFormat = chat.Format{
	Escape: EscapeMarkdown,
	Length: jsonLen,
	Limit:  MaxText,
	Note:   "\n\n*[cut to fit a Teams message; the whole submission is stored]*",
}

// markdownEscaper puts a backslash before every character the Adaptive Card markdown
// subset gives meaning to (CommonMark allows it before any punctuation), so visitor text
// cannot make bold, a list or a [link](url); a line break becomes a paragraph break,
// the only one a TextBlock shows.
var markdownEscaper = func() *strings.Replacer {
	pairs := []string{"\n", "\n\n"}
	for _, c := range `\*_~` + "`" + `|>#-+[]()<&.!` {
		pairs = append(pairs, string(c), `\`+string(c))
	}
	return strings.NewReplacer(pairs...)
}()

// EscapeMarkdown makes text inert in an Adaptive Card TextBlock.
func EscapeMarkdown(s string) string { return markdownEscaper.Replace(s) }

// EscapeLink makes the operator's inbox URL safe as markup: a bare link, or inside
// [label](url).
func EscapeLink(u string) string { return chat.MarkdownLink(u) }

// jsonLen is how many bytes s takes inside a JSON string as Render encodes it.
func jsonLen(s string) int {
	b, _ := json.Marshal(s) // a string always encodes
	return len(b) - 2
}

type payload struct {
	Type        string       `json:"type"`
	Attachments []attachment `json:"attachments"`
}

type attachment struct {
	ContentType string  `json:"contentType"`
	ContentURL  *string `json:"contentUrl"`
	Content     card    `json:"content"`
}

type card struct {
	Schema  string      `json:"$schema"`
	Type    string      `json:"type"`
	Version string      `json:"version"`
	Body    []textBlock `json:"body"`
	Actions []action    `json:"actions,omitempty"`
}

type textBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Wrap     bool   `json:"wrap"`
	Weight   string `json:"weight,omitempty"`
	Size     string `json:"size,omitempty"`
	IsSubtle bool   `json:"isSubtle,omitempty"`
}

type action struct {
	Type  string `json:"type"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

// Render returns the Workflows webhook body for a submission: a message with one
// Adaptive Card (version 1.4): the title, a text block with every field as a bold name
// and its escaped value (cut with a note past MaxText), a subtle footer with the id and
// the time, and an "Open in the inbox" button when there is a link. It is pure, so
// intake renders it once and every retry sends these bytes.
func Render(s chat.Submission) ([]byte, error) {
	body := make([]chat.Part, 0, len(s.Fields))
	for i, f := range s.Fields {
		sep := "\n\n"
		if i == 0 {
			sep = ""
		}
		body = append(body, chat.Part{Markup: sep + "**" + EscapeMarkdown(f.Name) + "**: ", Text: f.Value})
		if f.Link != "" {
			body = append(body, chat.Part{Markup: " " + EscapeMarkdown(f.Link)})
		}
	}
	fields, _ := textFormat.Fit("", body, "")
	blocks := []textBlock{{Type: "TextBlock", Text: EscapeMarkdown(s.Title()), Wrap: true, Weight: "Bolder", Size: "Medium"}}
	if fields != "" {
		blocks = append(blocks, textBlock{Type: "TextBlock", Text: fields, Wrap: true})
	}
	blocks = append(blocks, textBlock{Type: "TextBlock", Wrap: true, IsSubtle: true, Size: "Small",
		Text: "Submission " + EscapeMarkdown(s.ID) + ", received " + EscapeMarkdown(s.Received.UTC().Format(time.RFC3339))})
	c := newCard(blocks)
	if s.Link != "" {
		c.Actions = []action{{Type: "Action.OpenUrl", Title: "Open in the inbox", URL: s.Link}}
	}
	return encode(c)
}

// RenderText returns the Workflows webhook body for an operator's `text` template
// rendered into parts: a card with one text block, the template's markdown as written,
// every value escaped, cut past MaxText only in values (chat.Format.FitMarkup).
func RenderText(parts []chat.Part) ([]byte, error) {
	text, _, err := textFormat.FitMarkup(parts)
	if err != nil {
		return nil, fmt.Errorf("teams: %w", err)
	}
	return encode(newCard([]textBlock{{Type: "TextBlock", Text: text, Wrap: true}}))
}

func newCard(body []textBlock) card {
	return card{Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: "1.4", Body: body}
}

func encode(c card) ([]byte, error) {
	b, err := json.Marshal(payload{Type: "message", Attachments: []attachment{{ContentType: "application/vnd.microsoft.card.adaptive", Content: c}}})
	if err != nil {
		return nil, fmt.Errorf("teams: encode card: %w", err)
	}
	return b, nil
}
