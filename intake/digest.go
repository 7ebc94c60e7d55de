package intake

import (
	"errors"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/digest"
)

// checkDigest validates a digest route (Route.Digest) and keeps its parsed schedule. A
// digest lists every accepted submission of the form (docs/design.md, "Digests"), so it
// takes no guards and is no fallback; its subject and body are built in.
func (r *Route) checkDigest() error {
	if r.Digest == "" {
		return nil
	}
	if r.Channel != outbox.ChannelEmail {
		return errors.New("digest is for email routes")
	}
	if len(r.When) > 0 || r.Fallback {
		return errors.New("digest: a digest lists every accepted submission of the form, so it takes no `when` guards and is no fallback")
	}
	if r.Subject != "" || r.BodyText != "" || r.BodyHTML != "" {
		return errors.New("digest: the digest e-mail's subject and body are built in; subject, body_text and body_html do not apply")
	}
	s, err := digest.Parse(r.Digest)
	if err != nil {
		return errors.New("digest: " + err.Error())
	}
	r.schedule = s
	return nil
}

// hasDigest reports whether the form has a digest route: every accepted submission is
// then listed somewhere, so none is unrouted.
func (c *Config) hasDigest() bool {
	for i := range c.Routes {
		if c.Routes[i].Digest != "" {
			return true
		}
	}
	return false
}

// DigestRoutes returns the form's digest routes, for the App's digest closer; call it
// after Provision.
func (c *Config) DigestRoutes() []digest.Route {
	var out []digest.Route
	for _, r := range c.Routes {
		if r.Digest == "" {
			continue
		}
		out = append(out, digest.Route{
			Form:        c.Form,
			Name:        r.Name,
			Schedule:    r.schedule,
			To:          r.To,
			LinkOnly:    r.Content == ContentLink,
			InboxURL:    c.InboxURL,
			MaxAttempts: c.maxAttempts(r),
		})
	}
	return out
}
