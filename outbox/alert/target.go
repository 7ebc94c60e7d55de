package alert

import (
	"fmt"
	"slices"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Target is one place alerts go: an e-mail address (through the configured e-mail
// providers), a chat target, or a signed webhook. Its secrets (a bot token, a webhook's
// signing key) stay in the configuration, registered where the providers look them up.
type Target struct {
	Channel outbox.Channel
	// To is the e-mail address; ChatID the Telegram chat; URL the webhook, Slack,
	// Discord or Teams URL.
	To, ChatID, URL string
	// MaxAttempts is the attempt budget of each notice's delivery (0: the channel's
	// default, outbox.DefaultEmailAttempts or outbox.DefaultWebhookAttempts).
	MaxAttempts int
}

// Recipient is the delivery's recipient: the address, the chat id or the URL.
func (t Target) Recipient() string {
	switch {
	case t.Channel == outbox.ChannelEmail:
		return t.To
	case t.Channel == outbox.ChannelTelegram:
		return t.ChatID
	}
	return t.URL
}

// Route is the delivery's route name: "alert-" and the channel. A notice's deliveries
// belong to its own submission, so two targets of one channel differ by recipient.
func (t Target) Route() string { return "alert-" + string(t.Channel) }

// Describe names the target in logs without its credential: a chat service's URL is
// one, so only the channel is named.
func (t Target) Describe() string {
	switch t.Channel {
	case outbox.ChannelEmail:
		return "email " + t.To
	case outbox.ChannelTelegram:
		return "telegram " + t.ChatID
	case outbox.ChannelWebhook:
		return "webhook " + t.URL
	}
	return string(t.Channel)
}

// Check refuses a target that cannot be planned.
func (t Target) Check() error {
	if t.Channel != outbox.ChannelEmail && t.Channel != outbox.ChannelWebhook && !t.Channel.IsChat() {
		return fmt.Errorf("alerts: unknown channel %q", t.Channel)
	}
	if t.Recipient() == "" {
		return fmt.Errorf("alerts: %s target without a recipient", t.Channel)
	}
	return nil
}

// independent reports whether t may carry an alert about a failure of channel on
// destination: never through the failing channel (an e-mail failure is one of the
// e-mail provider chain, which an autoreply shares), never to the failing destination.
func (t Target) independent(channel, destination string) bool {
	ch := outbox.Channel(channel)
	if ch == outbox.ChannelAutoreply {
		ch = outbox.ChannelEmail
	}
	if ch != "" && t.Channel == ch {
		return false
	}
	return destination == "" || t.Recipient() != destination
}

// Uncovered returns the channels among used for whose failures no target is left: an
// alert about them would reach nobody. The App logs a warning per channel at load.
func Uncovered(targets []Target, used []outbox.Channel) []outbox.Channel {
	var out []outbox.Channel
	for _, ch := range used {
		if ch == outbox.ChannelAutoreply {
			ch = outbox.ChannelEmail
		}
		if slices.Contains(out, ch) {
			continue
		}
		if !slices.ContainsFunc(targets, func(t Target) bool { return t.independent(string(ch), "") }) {
			out = append(out, ch)
		}
	}
	return out
}
