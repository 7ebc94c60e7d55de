package intake

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// validate checks data against the field spec and returns the violations in spec order,
// then those of fields over MaxFieldLength (overLength).
// An empty optional field is fine; a required one that is missing or empty says only
// that, since its other checks would add nothing the visitor can act on.
func (c *Config) validate(data outbox.Fields) []Violation {
	var out []Violation
	for _, spec := range c.Fields {
		if spec.File {
			continue // validateFileFields and judgeFiles (upload.go)
		}
		v, _ := data.Get(spec.Name)
		if v == "" {
			if spec.Required {
				out = append(out, Violation{Field: spec.Name, Message: spec.Name + " is required"})
			}
			continue
		}
		fail := func(format string, args ...any) {
			out = append(out, Violation{Field: spec.Name, Message: spec.Name + " " + fmt.Sprintf(format, args...)})
		}
		n := utf8.RuneCountInString(v)
		if spec.MinLength > 0 && n < spec.MinLength {
			fail("must be at least %d characters", spec.MinLength)
		}
		if spec.MaxLength > 0 && n > spec.MaxLength {
			fail("must be at most %d characters", spec.MaxLength)
		}
		if spec.Email && !validEmail(v) {
			fail("must be a valid email address")
		}
		if spec.URL && !validURL(v) {
			fail("must be a web address starting with http:// or https://")
		}
		if spec.Number && !validNumber(v) {
			fail("must be a number")
		}
		if len(spec.OneOf) > 0 && !slices.Contains(spec.OneOf, v) {
			fail("must be one of: %s", strings.Join(spec.OneOf, ", "))
		}
		if spec.pattern != nil && !spec.pattern.MatchString(v) {
			fail("is not in the expected format")
		}
	}
	return append(out, c.overLength(data)...)
}

// overLength returns a violation for every field over MaxFieldLength, the limit of any
// one value, in data order. A field whose spec has a max_length is left to it: Provision
// keeps every max_length within MaxFieldLength, so that check already reported it.
func (c *Config) overLength(data outbox.Fields) []Violation {
	var out []Violation
	for _, f := range data {
		if utf8.RuneCountInString(f.Value) <= c.MaxFieldLength {
			continue
		}
		if i := slices.IndexFunc(c.Fields, func(s FieldSpec) bool { return s.Name == f.Name }); i >= 0 && c.Fields[i].MaxLength > 0 {
			continue
		}
		out = append(out, Violation{Field: f.Name,
			Message: fmt.Sprintf("%s must be at most %d characters", f.Name, c.MaxFieldLength)})
	}
	return out
}

// validURL accepts absolute http(s) URLs with a host, which rules out javascript:,
// data: and relative references that would be dangerous or meaningless as a link.
func validURL(s string) bool {
	if hasControl(s) || strings.ContainsAny(s, " \\") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func validNumber(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	// No hex floats or digit separators: what a person types in a number field.
	return err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) && !strings.ContainsAny(s, "xX_")
}

// Check reports what is wrong with one field spec on its own (its name, lengths and
// pattern), quoting the spec as written. Provision runs it for every field; the Caddyfile
// parser (internal/caddyconf/caddyfile.go) runs it on each field line so the error names that line.
func (f FieldSpec) Check() error {
	switch {
	case strings.TrimSpace(f.Name) == "":
		return fmt.Errorf("field name is empty")
	case hasControl(f.Name) || len(f.Name) > MaxFieldNameLength:
		return fmt.Errorf("field %q: not a plain field name", f.Name)
	case strings.HasPrefix(f.Name, "_"):
		// Underscore names are instructions to the service and never reach Data, so a
		// spec for one could never be satisfied.
		return fmt.Errorf("field %q: names starting with _ are reserved", f.Name)
	case f.MaxLength < 0:
		return fmt.Errorf("field %q: max_length must not be negative", f.Name)
	case f.MinLength < 0:
		return fmt.Errorf("field %q: min_length must not be negative", f.Name)
	case f.MaxLength > 0 && f.MinLength > f.MaxLength:
		return fmt.Errorf("field %q: min_length %d is above max_length %d", f.Name, f.MinLength, f.MaxLength)
	case f.File && (f.MinLength != 0 || f.MaxLength != 0 || f.Email || f.URL || f.Number || len(f.OneOf) > 0 || f.Pattern != ""):
		return fmt.Errorf("field %q: a file field takes only required, max_size, max_files and types", f.Name)
	case !f.File && (f.MaxFileSize != 0 || f.MaxFiles != 0 || len(f.Types) > 0):
		return fmt.Errorf("field %q: max_size, max_files and types are for file fields (field %s file ...)", f.Name, f.Name)
	case f.MaxFileSize < 0 || f.MaxFiles < 0:
		return fmt.Errorf("field %q: max_size and max_files must not be negative", f.Name)
	}
	for _, t := range f.Types {
		if major, minor, ok := strings.Cut(t, "/"); !ok || major == "" || minor == "" || hasControl(t) ||
			strings.ContainsAny(t, " ;,") || (major == "*" && minor != "*") {
			return fmt.Errorf("field %q: type %q: want a media type such as application/pdf or image/*", f.Name, t)
		}
	}
	if f.Pattern != "" {
		// The pattern alone, not the anchored form compiled below: the error then quotes
		// what the user wrote, and a pattern like `a)|(b` that only parses once wrapped
		// is refused instead of silently matching something else.
		if _, err := regexp.Compile(f.Pattern); err != nil {
			return fmt.Errorf("field %q: pattern %q is not a valid regular expression: %s",
				f.Name, f.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
	return nil
}

// provisionFieldChecks compiles patterns, anchored to the whole value. Check has already
// refused a pattern that does not compile on its own, and wrapping a valid expression in
// a non-capturing group keeps it valid.
func (c *Config) provisionFieldChecks() error {
	for i := range c.Fields {
		f := &c.Fields[i]
		if f.Pattern != "" {
			re, err := regexp.Compile(`^(?:` + f.Pattern + `)$`)
			if err != nil {
				return fmt.Errorf("field %q: pattern %q: %w", f.Name, f.Pattern, err)
			}
			f.pattern = re
		}
	}
	return nil
}
