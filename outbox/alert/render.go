package alert

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
	"github.com/formoutbox/caddy-form-outbox/providers/discord"
	"github.com/formoutbox/caddy-form-outbox/providers/slack"
	"github.com/formoutbox/caddy-form-outbox/providers/teams"
	"github.com/formoutbox/caddy-form-outbox/providers/telegram"
)

// message is a notice in words. Every part of it comes from an alert's state (a kind,
// a form or route name, counts, times, the configured inbox URL), never from a visitor,
// and sources promise their summaries hold no secret (outbox.AlertCondition).
type message struct {
	Subject string
	Lines   []string
}

// describe words notice n about a: what happened, how many leads, since when, and where
// to look.
func describe(notice string, a outbox.Alert, now time.Time, inboxURL string) message {
	var head string
	switch notice {
	case outbox.AlertOpened:
		head = "Alert"
	case outbox.AlertStill:
		head = fmt.Sprintf("Still happening (notice %d)", a.Notices+1)
	default:
		head = "Resolved"
	}
	m := message{Subject: "[form_outbox] " + head + ": " + a.Summary}
	m.Lines = append(m.Lines, head+": "+a.Summary)
	leads := "unknown"
	if a.Affected > 0 || a.Kind == outbox.AlertDeliveryDead {
		leads = fmt.Sprint(a.Affected)
	}
	m.Lines = append(m.Lines, "Leads affected: "+leads)
	if a.Form != "" {
		m.Lines = append(m.Lines, "Form: "+a.Form)
	}
	m.Lines = append(m.Lines, "Kind: "+a.Kind+" ("+a.Key+")")
	if a.Channel != "" {
		m.Lines = append(m.Lines, "Failing channel: "+a.Channel+" (this alert does not travel through it)")
	}
	m.Lines = append(m.Lines, "Open since: "+a.OpenedAt.UTC().Format(time.RFC3339))
	if notice == outbox.AlertResolved {
		m.Lines = append(m.Lines, "Resolved at: "+now.UTC().Format(time.RFC3339))
	}
	if inboxURL != "" {
		m.Lines = append(m.Lines, "Inbox: "+inboxLink(inboxURL, a))
	}
	return m
}

// payload renders m for target t: the exact bytes the provider sends, like intake's
// payloads (outbox.Payload), so a retry sends the same notice.
func payload(t Target, notice string, a outbox.Alert, m message, now time.Time) (outbox.Payload, error) {
	text := strings.Join(m.Lines, "\n")
	parts := []chat.Part{{Text: text}}
	var (
		body []byte
		err  error
	)
	switch t.Channel {
	case outbox.ChannelEmail:
		return outbox.Payload{To: t.To, Subject: m.Subject, Text: text + "\n"}, nil
	case outbox.ChannelWebhook:
		body, err = json.Marshal(webhookBody{Type: "alert." + notice, Timestamp: now.UTC(), Data: webhookAlert{
			ID: a.ID.String(), Kind: a.Kind, Key: a.Key, Form: a.Form, Summary: a.Summary, Affected: a.Affected,
			Channel: a.Channel, Notices: a.Notices, OpenedAt: a.OpenedAt.UTC(), Text: text}})
		return outbox.Payload{URL: t.URL, Body: body}, err
	case outbox.ChannelTelegram:
		body, err = telegram.RenderText(t.ChatID, parts)
		return outbox.Payload{To: t.ChatID, Body: body}, err
	case outbox.ChannelSlack:
		// slack.RenderText heads a message "New submission to form ...": an alert is
		// not one, so its top-level text is the notice itself, escaped the same way.
		body, err = json.Marshal(slackMessage{Text: slack.EscapeMrkdwn(text)})
	case outbox.ChannelDiscord:
		body, err = discord.RenderText(parts)
	case outbox.ChannelTeams:
		body, err = teams.RenderText(parts)
	default:
		return outbox.Payload{}, fmt.Errorf("alert target: unknown channel %q", t.Channel)
	}
	return outbox.Payload{URL: t.URL, Body: body}, err
}

// webhookBody is a notice as a webhook receives it: the Standard Webhooks envelope the
// webhook provider signs (providers/webhook), typed alert.opened, alert.still or
// alert.resolved.
type webhookBody struct {
	Type      string       `json:"type"`
	Timestamp time.Time    `json:"timestamp"`
	Data      webhookAlert `json:"data"`
}

type webhookAlert struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	Key      string    `json:"key"`
	Form     string    `json:"form,omitempty"`
	Summary  string    `json:"summary"`
	Affected int       `json:"affected"`
	Channel  string    `json:"channel,omitempty"`
	Notices  int       `json:"notices"`
	OpenedAt time.Time `json:"opened_at"`
	Text     string    `json:"text"`
}

type slackMessage struct {
	Text        string `json:"text"`
	UnfurlLinks bool   `json:"unfurl_links"`
	UnfurlMedia bool   `json:"unfurl_media"`
}

// inboxLink is where the inbox shows what the alert is about: the form's dead deliveries
// for delivery_dead, the overview otherwise.
func inboxLink(inboxURL string, a outbox.Alert) string {
	base := strings.TrimRight(inboxURL, "/")
	if a.Kind == outbox.AlertDeliveryDead && a.Form != "" {
		return base + "/submissions?delivery=dead&form=" + url.QueryEscape(a.Form)
	}
	return base + "/"
}
