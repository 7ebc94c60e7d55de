package telegram

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// MaxText is Telegram's limit on a message's text, in UTF-16 units after entities are
// parsed. Fit measures the text before parsing, which is never shorter, so a rendered
// message always fits.
const MaxText = 4096

// textFormat is Telegram's HTML parse mode, chosen over MarkdownV2 because it needs
// only three characters escaped and an unknown tag is an error rather than a silent
// change of meaning.
var textFormat = chat.Format{
	Escape: EscapeHTML,
	Length: chat.UTF16Len,
	Limit:  MaxText,
	Note:   "\n\n<i>[cut to fit Telegram's 4096-character limit; the whole submission is stored]</i>",
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// EscapeHTML makes text inert in Telegram's HTML parse mode: no tag, no entity, and no
// way out of an attribute when an operator's template puts a value in href="...".
func EscapeHTML(s string) string { return htmlEscaper.Replace(s) }

// EscapeLink makes the operator's inbox URL safe in text and in an href="..." attribute.
func EscapeLink(u string) string { return EscapeHTML(u) }

// sendMessage is the Bot API sendMessage request body. The token is not part of it: it
// goes in the URL at send time, so the stored payload never holds it.
type sendMessage struct {
	ChatID             string             `json:"chat_id"`
	Text               string             `json:"text"`
	ParseMode          string             `json:"parse_mode"`
	LinkPreviewOptions linkPreviewOptions `json:"link_preview_options"`
}

type linkPreviewOptions struct {
	IsDisabled bool `json:"is_disabled"`
}

// Render returns the sendMessage body for chatID: the form name, every field as a bold
// name and its escaped value, then the submission id, the time and the inbox link when
// there is one; cut with a note past MaxText. It is pure, so intake can render at
// intake and store the bytes every retry sends.
func Render(chatID string, s chat.Submission) ([]byte, error) {
	if strings.TrimSpace(chatID) == "" {
		return nil, fmt.Errorf("telegram: empty chat id")
	}
	head := "<b>" + EscapeHTML(s.Title()) + "</b>\n"
	body := make([]chat.Part, 0, len(s.Fields))
	for _, f := range s.Fields {
		body = append(body, chat.Part{Markup: "\n<b>" + EscapeHTML(f.Name) + "</b>: ", Text: f.Value})
		if f.Link != "" {
			body = append(body, chat.Part{Markup: " " + EscapeHTML(f.Link)})
		}
	}
	tail := "\n\n<i>Submission " + EscapeHTML(s.ID) + ", received " + s.Received.UTC().Format(time.RFC3339) + "</i>"
	if s.Link != "" {
		tail += "\n" + `<a href="` + EscapeLink(s.Link) + `">Open in the inbox</a>`
	}
	text, _ := textFormat.Fit(head, body, tail)
	return encode(chatID, text)
}

// RenderText returns the sendMessage body for an operator's `text` template rendered
// into parts: the template's own HTML is sent as written, every value escaped, and a cut
// past MaxText falls only in values (chat.Format.FitMarkup).
func RenderText(chatID string, parts []chat.Part) ([]byte, error) {
	if strings.TrimSpace(chatID) == "" {
		return nil, fmt.Errorf("telegram: empty chat id")
	}
	text, _, err := textFormat.FitMarkup(parts)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	return encode(chatID, text)
}

func encode(chatID, text string) ([]byte, error) {
	b, err := json.Marshal(sendMessage{ChatID: chatID, Text: text, ParseMode: "HTML",
		LinkPreviewOptions: linkPreviewOptions{IsDisabled: true}})
	if err != nil {
		return nil, fmt.Errorf("telegram: encode message: %w", err)
	}
	return b, nil
}
