package outbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// Sender sends one claimed delivery. The Worker depends on this rather than on providers
// directly so that routing (which provider serves which channel, failover chains) stays
// configuration, and tests can stand in a fake.
type Sender interface {
	Send(ctx context.Context, d Delivery) (providers.Result, error)
}

// Router is the Sender the App configures: it turns a delivery's stored payload into a
// providers.Message and hands it to the provider configured for the delivery's channel.
// Email is usually a failover chain (SES then Resend) that itself implements Provider.
type Router struct {
	Email   providers.Provider
	Webhook providers.Provider
	// The chat providers post the body rendered at intake; Telegram finds the bot by the
	// delivery's chat id.
	Telegram providers.Provider
	Slack    providers.Provider
	Discord  providers.Provider
	Teams    providers.Provider
	// Files, when set, returns the store an email's attachments are read from (nil while
	// no store is open).
	Files func() FileStore
}

// Send implements Sender. Errors that no retry can fix (an unknown channel, a channel with
// no provider configured, a payload that does not decode) are Permanent, so the delivery
// goes to dead at once with a message that says what to configure, instead of burning
// its attempt budget.
func (r Router) Send(ctx context.Context, d Delivery) (providers.Result, error) {
	var p providers.Provider
	switch d.Channel {
	case ChannelEmail, ChannelAutoreply:
		p = r.Email
	case ChannelWebhook:
		p = r.Webhook
	case ChannelTelegram:
		p = r.Telegram
	case ChannelSlack:
		p = r.Slack
	case ChannelDiscord:
		p = r.Discord
	case ChannelTeams:
		p = r.Teams
	default:
		return providers.Result{}, &providers.Error{Class: providers.Permanent, Code: "unknown_channel",
			Err: fmt.Errorf("route %q: unknown channel %q", d.Route, d.Channel)}
	}
	if p == nil {
		return providers.Result{}, &providers.Error{Class: providers.Permanent, Code: "no_provider",
			Err: fmt.Errorf("route %q: no %s provider is configured; configure one and retry the delivery", d.Route, d.Channel)}
	}
	m, err := MessageFor(d)
	if err != nil {
		return providers.Result{Provider: p.Name()}, &providers.Error{Class: providers.Permanent, Code: "bad_payload", Err: err}
	}
	if m.Attachments, err = r.attachments(ctx, d); err != nil {
		return providers.Result{Provider: p.Name()}, err
	}
	res, err := p.Send(ctx, m)
	if res.Provider == "" {
		res.Provider = p.Name()
	}
	if len(m.Body) > 0 {
		// The webhook and chat providers post m.Body byte for byte (and a webhook's
		// signature covers exactly it), so its hash names what the receiver got.
		sum := sha256.Sum256(m.Body)
		res.BodySHA256 = hex.EncodeToString(sum[:])
	}
	return res, err
}

// MessageFor decodes a delivery's payload snapshot into the message its provider sends.
// The delivery id becomes the message id: the idempotency key every retry repeats.
func MessageFor(d Delivery) (providers.Message, error) {
	var p Payload
	if len(d.Payload) > 0 {
		if err := json.Unmarshal(d.Payload, &p); err != nil {
			return providers.Message{}, fmt.Errorf("decode payload of delivery %s: %w", d.ID, err)
		}
	}
	ch := d.Channel
	if ch == ChannelAutoreply {
		ch = ChannelEmail // an e-mail like any other to the providers
	}
	m := providers.Message{
		ID:      d.ID.String(),
		Channel: string(ch),
		From:    p.From,
		To:      p.To,
		ReplyTo: p.ReplyTo,
		Subject: p.Subject,
		Text:    p.Text,
		HTML:    p.HTML,
		URL:     p.URL,
		Body:    []byte(p.Body),
	}
	// The recipient column is the planned target; the payload normally repeats it, but
	// a payload written without it must still go where the row says.
	switch d.Channel {
	case ChannelEmail, ChannelAutoreply, ChannelTelegram:
		if m.To == "" {
			m.To = d.Recipient
		}
	case ChannelWebhook, ChannelSlack, ChannelDiscord, ChannelTeams:
		if m.URL == "" {
			m.URL = d.Recipient
		}
	}
	return m, nil
}

// attachments reads the content of the files d's payload attaches. A file erased since
// (retention, an operator) is left out: the text still names it. A store that does not
// answer is a temporary error, so the delivery is tried again.
func (r Router) attachments(ctx context.Context, d Delivery) ([]providers.Attachment, error) {
	var p struct {
		Attachments []AttachmentRef `json:"attachments"`
	}
	if d.Channel != ChannelEmail || len(d.Payload) == 0 || json.Unmarshal(d.Payload, &p) != nil || len(p.Attachments) == 0 {
		return nil, nil
	}
	var fs FileStore
	if r.Files != nil {
		fs = r.Files()
	}
	if fs == nil {
		return nil, &providers.Error{Class: providers.Temporary, Code: "no_store", Err: errors.New("attachments: no store is open")}
	}
	var out []providers.Attachment
	for _, a := range p.Attachments {
		var buf bytes.Buffer
		_, err := fs.CopyFile(ctx, a.FileID, &buf)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, &providers.Error{Class: providers.Temporary, Code: "attachment_unreadable", Err: fmt.Errorf("attachment %s: %w", a.FileID, err)}
		}
		out = append(out, providers.Attachment{Name: a.Name, ContentType: a.Type, Content: buf.Bytes()})
	}
	return out, nil
}
