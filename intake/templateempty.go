package intake

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TemplateEmpty is one delivery whose message printed a field the submission did not
// carry: the template.empty event's data. It names the field, never a value. The event
// row has the submission and delivery ids too; Delivery repeats the latter so that a
// spooled submission's event (outbox/spool keeps kind, data and time) still names it.
type TemplateEmpty struct {
	Form     string `json:"form"`
	Route    string `json:"route"`
	Option   string `json:"option"`
	Field    string `json:"field"`
	Delivery string `json:"delivery"`
}

// missing reports whether a printed field reads empty because the post lacks it. A
// field the form declares as optional may be left out (an unchecked box): its absence
// was the operator's choice, not a typo, so only a field that is undeclared or required
// counts. A field sent empty counts neither: the visitor left it blank.
func (c *Config) missing(name string, data outbox.Fields) bool {
	if _, ok := data.Get(name); ok {
		return false
	}
	for _, f := range c.Fields {
		if f.Name == name {
			return f.Required
		}
	}
	return true
}

// markTemplateEmpty records a template.empty event per delivery of route and per
// printed field the submission lacks, in the accept transaction with the submission
// (like schema.drift), so the blank part of what is sent has a trace: the inbox shows
// it, the metric counts it (Serve) and the template_empty alert reads it
// (outbox.TemplateEmptyAlerts). It costs a lookup per printed field and nothing more
// on the usual post, which carries them all.
func (c *Config) markTemplateEmpty(sub *outbox.Submission, route *Route, deliveries []outbox.Delivery, now time.Time) error {
	// A held-back post (spam, quarantined) is not sent now, and its review shows why
	// it was held; a spam flood must not raise template alerts.
	if len(route.printed) == 0 || sub.Status != outbox.SubmissionAccepted {
		return nil
	}
	type key struct{ option, field string }
	var seen map[key]bool
	for _, ref := range route.printed {
		k := key{ref.Option, ref.Field}
		if seen[k] || !c.missing(ref.Field, sub.Data) {
			continue
		}
		if seen == nil {
			seen = map[key]bool{}
		}
		seen[k] = true
		for _, d := range deliveries {
			if err := addTemplateEmpty(sub, TemplateEmpty{Form: c.Form, Route: route.Name, Option: ref.Option,
				Field: ref.Field, Delivery: d.ID.String()}, d.ID, now); err != nil {
				return err
			}
		}
	}
	return nil
}

func addTemplateEmpty(sub *outbox.Submission, te TemplateEmpty, delivery uuid.UUID, now time.Time) error {
	data, err := json.Marshal(te)
	if err != nil {
		return fmt.Errorf("template.empty event: %w", err)
	}
	sub.Events = append(sub.Events, outbox.Event{Kind: outbox.EventTemplateEmpty, SubmissionID: sub.ID,
		DeliveryID: delivery, Data: data, At: now})
	return nil
}
