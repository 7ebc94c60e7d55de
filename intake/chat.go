package intake

import (
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
	"github.com/formoutbox/caddy-form-outbox/providers/discord"
	"github.com/formoutbox/caddy-form-outbox/providers/slack"
	"github.com/formoutbox/caddy-form-outbox/providers/teams"
	"github.com/formoutbox/caddy-form-outbox/providers/telegram"
)

// chatSubmission is what the chat renderers read: the stored fields in form order, and
// the inbox link (see inboxLink) when inbox_url is set.
func (c *Config) chatSubmission(sub *outbox.Submission, link string) chat.Submission {
	fields := make([]chat.Field, len(sub.Data))
	for i, f := range sub.Data {
		fields[i] = chat.Field{Name: f.Name, Value: f.Value}
	}
	// Files follow the fields: name, size, type and SHA-256, and the signed link with
	// files_url; never their content.
	sign := c.fileLink(sub.CreatedAt)
	for _, f := range deliveredFiles(sub) {
		field := chat.Field{Name: "file " + f.Field, Value: fileSummary(f) + " sha256 " + f.SHA256}
		if sign != nil {
			field.Link = sign(f.ID)
		}
		fields = append(fields, field)
	}
	return chat.Submission{Form: c.Form, ID: sub.ID.String(), Received: sub.CreatedAt, Fields: fields, Link: link, Test: sub.Test}
}

// chatPayload renders a chat route's message into the exact request body the provider
// posts, so every retry sends these bytes: the route's `text` template over d when it
// has one, else the built-in message. A template that fails on this submission is
// returned as a failure to record, and the built-in message is used. Telegram's body
// names the chat and its recipient is the chat id; the others go to the route's webhook
// URL. No secret is part of it: the bot token is added to the request URL at send time.
func chatPayload(route Route, s chat.Submission, d ChatTemplateData) (outbox.Payload, string, *TemplateFailure, error) {
	var body []byte
	var failed *TemplateFailure
	if t := route.templates.chat; t != nil {
		parts, err := renderChatTemplate(t, d, chatLink(route.Channel))
		if err == nil && s.Test {
			// The operator's text does not say it is a test; the mark does, as the
			// operator's own text (no visitor value to isolate; plain in every markup).
			parts = append([]chat.Part{{Markup: chat.TestMark}}, parts...)
		}
		if err == nil {
			body, err = chatText(route, s, parts)
		}
		if err != nil {
			failed = &TemplateFailure{Route: route.Name, Option: "text", Template: route.Text, Error: err.Error()}
		}
	}
	var err error
	if body == nil {
		switch route.Channel {
		case outbox.ChannelTelegram:
			body, err = telegram.Render(route.ChatID, s)
		case outbox.ChannelSlack:
			body, err = slack.Render(s)
		case outbox.ChannelDiscord:
			body, err = discord.Render(s)
		case outbox.ChannelTeams:
			body, err = teams.Render(s)
		default:
			return outbox.Payload{}, "", nil, fmt.Errorf("plan route %s: %q is not a chat channel", route.Name, route.Channel)
		}
	}
	if err != nil {
		return outbox.Payload{}, "", nil, fmt.Errorf("plan route %s: %w", route.Name, err)
	}
	if route.Channel == outbox.ChannelTelegram {
		return outbox.Payload{To: route.ChatID, Body: body}, route.ChatID, failed, nil
	}
	return outbox.Payload{URL: route.URL, Body: body}, route.URL, failed, nil
}

// chatText is the request body of a chat route's `text` template, rendered into parts.
func chatText(route Route, s chat.Submission, parts []chat.Part) ([]byte, error) {
	switch route.Channel {
	case outbox.ChannelTelegram:
		return telegram.RenderText(route.ChatID, parts)
	case outbox.ChannelSlack:
		return slack.RenderText(s, parts)
	case outbox.ChannelDiscord:
		return discord.RenderText(parts)
	case outbox.ChannelTeams:
		return teams.RenderText(parts)
	}
	return nil, fmt.Errorf("%q is not a chat channel", route.Channel)
}

// chatLink is how the channel's templates print the inbox link: as markup safe in the
// target's link syntax.
func chatLink(ch outbox.Channel) func(string) string {
	switch ch {
	case outbox.ChannelTelegram:
		return telegram.EscapeLink
	case outbox.ChannelSlack:
		return slack.EscapeLink
	case outbox.ChannelDiscord:
		return discord.EscapeLink
	default:
		return teams.EscapeLink
	}
}
