package intake

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/canary"
)

// Canary is a form's `canary` option, or the global default (docs/caddyfile.md,
// "canary"): how often the form's canary runs (outbox/canary), and how long its routes
// have to deliver it. Off turns a global default off for one form.
type Canary struct {
	Every    Duration `json:"every,omitempty"`
	Deadline Duration `json:"deadline,omitempty"`
	Off      bool     `json:"off,omitempty"`
}

// Check refuses a canary that is neither off nor within outbox/canary's limits.
func (c *Canary) Check() error {
	if c == nil || c.Off {
		return nil
	}
	return canary.Check(time.Duration(c.Every), time.Duration(c.Deadline))
}

// CanaryUserAgent is the stored user agent of a canary submission: the inbox and an
// export tell it from a `_test` post by it.
const CanaryUserAgent = "form_outbox canary"

// canaryMessage is the one field of a canary of a form that declares no fields.
const canaryMessage = "A canary: a test submission form_outbox sends to check that this form's notifications arrive. Not a lead."

// PlanCanary returns a canary of the form (docs/design.md, "Canary"): an accepted test
// submission with the given id, created at now, and a pending delivery on every route
// whatever its guards, fallback routes included, so each route's destination is
// checked. A digest route plans none (it is periodic, outbox/digest), and a test
// submission gets no autoreply (autoreply.go) and is listed by no digest. Its fields
// are the declared ones with placeholder values (one message without a field spec), so
// the operator's subjects and templates render as they would for a lead. Provision must
// have run.
func (c *Config) PlanCanary(id uuid.UUID, now time.Time) (*outbox.Submission, []outbox.Delivery, error) {
	sub := &outbox.Submission{ID: id, Form: c.Form, Status: outbox.SubmissionAccepted, Data: c.canaryFields(),
		Meta: outbox.Meta{UserAgent: CanaryUserAgent}, Test: true, CreatedAt: now}
	var routes []Route
	for _, r := range c.Routes {
		if r.Digest == "" {
			routes = append(routes, r)
		}
	}
	deliveries, err := c.planRoutes(sub, specials{}, "", routes, now)
	if err != nil {
		return nil, nil, fmt.Errorf("plan canary of form %s: %w", c.Form, err)
	}
	return sub, deliveries, nil
}

// CanaryRoutes names the routes a canary checks: every route but the digest routes.
// Provision must have run (it names unnamed routes).
func (c *Config) CanaryRoutes() []string {
	var out []string
	for _, r := range c.Routes {
		if r.Digest == "" {
			out = append(out, r.Name)
		}
	}
	return out
}

// isFileField reports whether name is a declared file field.
func (c *Config) isFileField(name string) bool {
	for _, f := range c.Fields {
		if f.Name == name {
			return f.File
		}
	}
	return false
}

// canaryFields are the declared fields (not the file fields: a canary uploads
// nothing), each with a value its checks would take, then every other field a route's
// message prints (so no template renders a blank and records template.empty for a
// canary), or, when that is none, the one message field.
func (c *Config) canaryFields() outbox.Fields {
	var out outbox.Fields
	for _, f := range c.Fields {
		if f.File {
			continue
		}
		v := "canary"
		switch {
		case len(f.OneOf) > 0:
			v = f.OneOf[0]
		case f.Email:
			v = "canary@example.invalid"
		case f.URL:
			v = "https://example.invalid/canary"
		case f.Number:
			v = "0"
		}
		out = append(out, outbox.Field{Name: f.Name, Value: v})
	}
	for _, r := range c.Routes {
		for _, ref := range r.printed {
			if _, ok := out.Get(ref.Field); !ok && !c.isFileField(ref.Field) {
				out = append(out, outbox.Field{Name: ref.Field, Value: "canary"})
			}
		}
	}
	if len(out) == 0 {
		out = outbox.Fields{{Name: "message", Value: canaryMessage}}
	}
	return out
}
