package intake

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// capUnknown keeps the fields a post sends beyond the field spec, within bounds: the
// first MaxUnknownFields of them, each cut to MaxUnknownLength characters. A form that
// grew new fields keeps working (and monitor mode reports them); a bot that stuffs the
// form with junk cannot bloat the row. Without a field spec every field is expected and
// only the general max_fields / max_field_length apply.
func (c *Config) capUnknown(data outbox.Fields) (outbox.Fields, []string) {
	if len(c.Fields) == 0 {
		return data, nil
	}
	var unknown []string
	out := data[:0]
	for _, f := range data {
		if c.inSpec(f.Name) {
			out = append(out, f)
			continue
		}
		if len(unknown) >= c.MaxUnknownFields {
			continue
		}
		unknown = append(unknown, f.Name)
		f.Value = truncateRunes(f.Value, c.MaxUnknownLength)
		out = append(out, f)
	}
	return out, unknown
}

func (c *Config) inSpec(name string) bool {
	return slices.ContainsFunc(c.Fields, func(f FieldSpec) bool { return f.Name == name })
}

// driftEvent is the schema.drift event of a monitor-mode post that broke the field spec
// or sent fields the spec does not list. It names fields, never their values.
func driftEvent(form string, violations []Violation, unknown []string, now time.Time) (outbox.Event, error) {
	var broken []string
	for _, v := range violations {
		if !slices.Contains(broken, v.Field) {
			broken = append(broken, v.Field)
		}
	}
	data, err := json.Marshal(struct {
		Form    string   `json:"form"`
		Fields  []string `json:"fields,omitempty"`
		Unknown []string `json:"unknown,omitempty"`
	}{form, broken, unknown})
	if err != nil {
		return outbox.Event{}, fmt.Errorf("schema.drift event: %w", err)
	}
	return outbox.Event{Kind: outbox.EventSchemaDrift, Data: data, At: now}, nil
}

// violationEvent is the schema.violation event of an enforce-mode post quarantined for
// breaking the field spec: the same per-field messages its 422 answer lists, which name
// fields and rules, never values.
func violationEvent(form string, violations []Violation, now time.Time) (outbox.Event, error) {
	d := outbox.SchemaViolationData{Form: form, Errors: make([]outbox.FieldError, 0, len(violations))}
	for _, v := range violations {
		d.Errors = append(d.Errors, outbox.FieldError{Field: v.Field, Message: v.Message})
	}
	data, err := json.Marshal(d)
	if err != nil {
		return outbox.Event{}, fmt.Errorf("schema.violation event: %w", err)
	}
	return outbox.Event{Kind: outbox.EventSchemaViolation, Data: data, At: now}, nil
}
