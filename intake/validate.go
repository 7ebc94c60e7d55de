package intake

import (
	"fmt"
	"unicode/utf8"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// validate checks data against the field spec and returns the violations in spec order.
// An empty optional field is fine; a required one that is missing or empty says only
// that, since its other checks would add nothing the visitor can act on.
func (c *Config) validate(data outbox.Fields) []Violation {
	var out []Violation
	for _, spec := range c.Fields {
		v, _ := data.Get(spec.Name)
		if v == "" {
			if spec.Required {
				out = append(out, Violation{Field: spec.Name, Message: spec.Name + " is required"})
			}
			continue
		}
		if spec.MaxLength > 0 && utf8.RuneCountInString(v) > spec.MaxLength {
			out = append(out, Violation{
				Field:   spec.Name,
				Message: fmt.Sprintf("%s must be at most %d characters", spec.Name, spec.MaxLength),
			})
		}
		if spec.Email && !validEmail(v) {
			out = append(out, Violation{Field: spec.Name, Message: spec.Name + " must be a valid email address"})
		}
	}
	return out
}
