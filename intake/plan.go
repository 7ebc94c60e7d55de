package intake

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
	"github.com/google/uuid"
)

// plan makes one delivery per route per recipient, each with its rendered payload, so
// what will be sent is fixed at intake. Spam and quarantined submissions get their
// deliveries too, as skipped: releasing the submission only has to flip their status.
func (c *Config) plan(sub *outbox.Submission, sp specials, replyTo string, now time.Time) ([]outbox.Delivery, error) {
	routes, unrouted := c.routesFor(sub.Data)
	if unrouted {
		if err := c.markUnrouted(sub, now); err != nil {
			return nil, err
		}
	}
	out, err := c.planRoutes(sub, sp, replyTo, routes, now)
	if err != nil {
		return nil, err
	}
	return c.planAutoreply(out, sub, replyTo, now)
}

// planRoutes renders the deliveries of the routes sub takes (see plan).
func (c *Config) planRoutes(sub *outbox.Submission, sp specials, replyTo string, routes []Route, now time.Time) ([]outbox.Delivery, error) {
	status := outbox.DeliveryPending
	if sub.Status != outbox.SubmissionAccepted {
		status = outbox.DeliverySkipped
	}
	// The email bodies and the webhook body are the same for every route, the subject
	// for every recipient of a route: each is rendered once.
	var text, html string
	var link *outbox.Payload // the link-only email, rendered once
	var hookBody json.RawMessage
	var out []outbox.Delivery
	var err error
	inbox := c.inboxLink(sub)    // the submission's inbox page, for every route's message
	view := shownSubmission(sub) // what people read: no bidi controls (bidi.go)
	var chatSub *chat.Submission // rendered from once, for every chat route
	for _, route := range routes {
		var recipients []string
		var base outbox.Payload
		switch route.Channel {
		case outbox.ChannelEmail:
			recipients = route.To
			if route.Content == ContentLink {
				if link == nil {
					if link, err = c.linkEmail(sub, inbox); err != nil {
						return nil, err
					}
				}
				base = *link
				base.Subject = testSubject(sub, base.Subject)
				break
			}
			if text == "" {
				inBody := safetext.StripBidi(replyToInBody(replyTo, sub.Data)) // shown as text, like the fields
				text = emailText(c.Form, view, inBody, inbox)
				if html, err = emailHTML(c.Form, view, inBody, inbox); err != nil {
					return nil, err
				}
			}
			rt, rh := text, html
			if route.BodyText != "" || route.BodyHTML != "" {
				var failed []TemplateFailure
				rt, rh, failed = route.renderBodies(TemplateData{Form: c.Form, ID: sub.ID.String(), Link: inbox,
					Received: sub.CreatedAt, Fields: view.Data, Files: fileLines(view)}, text, html)
				for _, f := range failed {
					if err := markTemplateFailed(sub, f, now); err != nil {
						return nil, err
					}
				}
			}
			base = outbox.Payload{ReplyTo: replyTo, Subject: testSubject(sub, c.subject(route, view.Data, sp)), Text: rt, HTML: rh}
			if route.Attach {
				c.attach(&base, route, sub) // upload.go
			}
		case outbox.ChannelWebhook:
			recipients = []string{route.URL}
			if hookBody == nil {
				hookBody = webhookBody(sub, c.fileLink(now))
			}
			base = outbox.Payload{Body: hookBody}
		case outbox.ChannelTelegram, outbox.ChannelSlack, outbox.ChannelDiscord, outbox.ChannelTeams:
			if chatSub == nil {
				s := c.chatSubmission(view, inbox)
				chatSub = &s
			}
			var to string
			var failed *TemplateFailure
			d := ChatTemplateData{Form: c.Form, ID: chatSub.ID, Link: InboxLink(chatSub.Link), Received: sub.CreatedAt, Fields: view.Data, Files: fileLines(view)}
			if base, to, failed, err = chatPayload(route, *chatSub, d); err != nil {
				return nil, err
			}
			if failed != nil {
				if err := markTemplateFailed(sub, *failed, now); err != nil {
					return nil, err
				}
			}
			recipients = []string{to}
		default:
			return nil, fmt.Errorf("plan route %s: unknown channel %q", route.Name, route.Channel)
		}
		first := len(out)
		for _, to := range recipients {
			p := base
			switch route.Channel {
			case outbox.ChannelEmail:
				p.To = to
			case outbox.ChannelWebhook:
				p.URL = to
			}
			payload := p.AppendJSON(nil)
			id, err := uuid.NewV7()
			if err != nil {
				return nil, fmt.Errorf("plan route %s: delivery id: %w", route.Name, err)
			}
			out = append(out, outbox.Delivery{
				ID:            id,
				SubmissionID:  sub.ID,
				Route:         route.Name,
				Channel:       route.Channel,
				Recipient:     to,
				Status:        status,
				MaxAttempts:   c.maxAttempts(route),
				NextAttemptAt: now,
				Payload:       payload,
				CreatedAt:     now,
				UpdatedAt:     now,
			})
		}
		if route.Content != ContentLink { // the link-only email prints no field
			if err := c.markTemplateEmpty(sub, &route, out[first:], now); err != nil { // templateempty.go
				return nil, err
			}
		}
	}
	return out, nil
}

// markUnrouted records that no route matched: an event always, and the reason on an
// accepted submission (spam and quarantined ones keep the reason that held them).
func (c *Config) markUnrouted(sub *outbox.Submission, now time.Time) error {
	data, err := json.Marshal(struct {
		Form   string `json:"form"`
		Reason string `json:"reason"`
	}{c.Form, "no route matched"})
	if err != nil {
		return fmt.Errorf("submission.unrouted event: %w", err)
	}
	sub.Events = append(sub.Events, outbox.Event{Kind: outbox.EventUnrouted, Data: data, At: now})
	if sub.Status == outbox.SubmissionAccepted && sub.Reason == "" {
		sub.Reason = outbox.ReasonNoRouteMatched
	}
	return nil
}

// markTemplateFailed records a route's template failing on this submission, which then
// took the built-in message; Serve logs it too.
func markTemplateFailed(sub *outbox.Submission, f TemplateFailure, now time.Time) error {
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("template.failed event: %w", err)
	}
	sub.Events = append(sub.Events, outbox.Event{Kind: outbox.EventTemplateFailed, Data: data, At: now})
	return nil
}

// maxAttempts is the route's own budget, else the App's for webhooks, else the email
// budget, which the chat channels share: like an email, a chat message is read by a
// person, and a chat service's outage is retried on the same schedule.
func (c *Config) maxAttempts(route Route) int {
	switch {
	case route.MaxAttempts > 0:
		return route.MaxAttempts
	case route.Channel == outbox.ChannelWebhook && c.WebhookAttempts > 0:
		return c.WebhookAttempts
	case route.Channel != outbox.ChannelWebhook && c.EmailAttempts > 0:
		return c.EmailAttempts
	default:
		return outbox.DefaultAttempts(route.Channel)
	}
}
