package outbox

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
)

// Destination is where a delivery goes, as parking sees it (docs/operations.md, "Parked
// destinations"): the unit that is parked when it keeps failing, so that its leads wait
// instead of each burning its attempts to dead.
//
//   - a webhook, Slack, Discord or Teams delivery: its URL. The key and the label carry a
//     hash and the host only, never the URL: a chat webhook URL is its own credential,
//     and a webhook URL often carries a token in its path or query.
//   - Telegram: the chat id. The bot is found by the chat id (internal/senders.Registry
//     registers one bot per chat id), so the chat id names the bot too.
//   - e-mail and autoreplies: the e-mail provider account chain that sends them all (its
//     name, e.g. "ses,resend"). It fails as a destination only when every provider of the
//     chain refused for a reason that is not the recipient's (providers/chain/chain.go);
//     one recipient's bounce is that message's failure, never the destination's.
type Destination struct {
	// Key is stable and free of secrets: "webhook:<hash>", "slack:<hash>",
	// "telegram:<chat id>", "email:<providers>". It is what park and unpark take.
	Key     string
	Channel Channel
	// Label is what a person reads: the host of a URL, the chat id, the provider chain.
	Label string
}

// destinationHashLen is how many hex digits of SHA-256 a URL's key keeps: 64 bits, so
// that two URLs of one instance never share a key, and short enough to type.
const destinationHashLen = 16

// DestinationOf names d's destination. email is the name of the e-mail provider chain
// (providers.Provider.Name of the configured one, e.g. "ses,resend"); "" names it
// "email".
func DestinationOf(d Delivery, email string) Destination {
	ch := d.Channel
	switch {
	case ch.IsEmail():
		if email == "" {
			email = "email"
		}
		return Destination{Key: "email:" + email, Channel: ChannelEmail, Label: "e-mail via " + email}
	case ch == ChannelTelegram:
		return Destination{Key: "telegram:" + d.Recipient, Channel: ch, Label: "Telegram chat " + d.Recipient}
	default:
		sum := sha256.Sum256([]byte(d.Recipient))
		h := hex.EncodeToString(sum[:])[:destinationHashLen]
		return Destination{Key: string(ch) + ":" + h, Channel: ch, Label: string(ch) + " " + urlHost(d.Recipient) + " #" + h[:6]}
	}
}

// urlHost is the host of a URL, the part of it that names a service and not a secret;
// "?" when it does not parse.
func urlHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "?"
	}
	return u.Host
}
