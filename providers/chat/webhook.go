package chat

import (
	"context"
	"errors"
	"net/url"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// Webhook is a chat provider whose target is the delivery's URL (Slack, Discord, Teams):
// it posts the stored body there, and the services differ only in how the URL is
// completed and how an answer is read.
type Webhook struct {
	Poster
	// Service names the provider in results and errors ("slack").
	Service string
	// Target, when set, completes the configured URL before each post (Discord adds
	// wait=true); the stored URL stays as configured.
	Target func(u *url.URL)
	// Read turns the service's answer into its message id ("" when it has none) or a
	// classified refusal.
	Read func(Answer) (messageID string, err *providers.Error)
}

// Name implements providers.Provider.
func (w *Webhook) Name() string { return w.Service }

// Send implements providers.Provider: it posts m.Body, rendered at intake, to m.URL.
func (w *Webhook) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	res := providers.Result{Provider: w.Service}
	u, err := url.Parse(m.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return res, &providers.Error{Class: providers.Permanent, Code: "bad_url",
			Err: errors.New(w.Service + " webhook target is not an absolute http(s) URL")}
	}
	if w.Target != nil {
		w.Target(u)
	}
	a, perr := w.Post(ctx, u.String(), m.Body, m.URL)
	if perr != nil {
		return res, perr
	}
	if res.MessageID, perr = w.Read(a); perr != nil {
		return res, perr
	}
	return res, nil
}

var _ providers.Provider = (*Webhook)(nil)
