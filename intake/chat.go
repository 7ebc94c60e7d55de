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
// the inbox link when inbox_url is set.
func (c *Config) chatSubmission(sub *outbox.Submission) chat.Submission {
	fields := make([]chat.Field, len(sub.Data))
	for i, f := range sub.Data {
		fields[i] = chat.Field{Name: f.Name, Value: f.Value}
	}
	return chat.Submission{Form: c.Form, ID: sub.ID.String(), Received: sub.CreatedAt, Fields: fields, Link: c.inboxLink(sub)}
}

// chatPayload renders a chat route's message into the exact request body the provider
// posts, so every retry sends these bytes. Telegram's body names the chat and its
// recipient is the chat id; the others go to the route's webhook URL. No secret is
// part of it: the bot token is added to the request URL at send time.
func chatPayload(route Route, s chat.Submission) (outbox.Payload, string, error) {
	var body []byte
	var err error
	to := route.URL
	switch route.Channel {
	case outbox.ChannelTelegram:
		to = route.ChatID
		body, err = telegram.Render(route.ChatID, s)
	case outbox.ChannelSlack:
		body, err = slack.Render(s)
	case outbox.ChannelDiscord:
		body, err = discord.Render(s)
	case outbox.ChannelTeams:
		body, err = teams.Render(s)
	default:
		return outbox.Payload{}, "", fmt.Errorf("plan route %s: %q is not a chat channel", route.Name, route.Channel)
	}
	if err != nil {
		return outbox.Payload{}, "", fmt.Errorf("plan route %s: %w", route.Name, err)
	}
	if route.Channel == outbox.ChannelTelegram {
		return outbox.Payload{To: to, Body: body}, to, nil
	}
	return outbox.Payload{URL: to, Body: body}, to, nil
}
