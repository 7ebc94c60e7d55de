package intake

import (
	"fmt"
	"slices"
	"strings"
)

// CheckRouted refuses a form that notifies nobody without saying so: a form with no
// route at all (no notify, no digest, no chat) stores every post and tells no one, which
// is what a forgotten `notify` line looks like too. `store_only` says it is deliberate
// (docs/caddyfile.md, "Routes"). Both entry points call it: the Caddyfile parser, so the
// error names the line, and the handler's Provision for JSON configs.
func (c *Config) CheckRouted() error {
	switch {
	case len(c.Routes) == 0 && !c.StoreOnly:
		return fmt.Errorf("no notify route%s, so nobody would hear of its posts: add a `notify` line, or `store_only` if keeping posts without notifying anyone is deliberate", c.inForm())
	case len(c.Routes) > 0 && c.StoreOnly:
		return fmt.Errorf("store_only and notify exclude each other%s: store_only says no one is notified", c.inForm())
	}
	return nil
}

// uncoveredCase describes the posts no route takes, or "" when every post takes one: a
// route without guards, a fallback route or a digest route covers everything. Otherwise
// every route has guards, and a post none of them holds for is stored with the reason
// no_route_matched and sent nowhere. When every route guards one field with is/in, the
// case is named by its values ("topic is neither sales nor support"), and a field
// declared with one_of (and required, in enforce mode) whose values the routes all take
// is covered; otherwise the case is "none of these holds: ...".
func (c *Config) uncoveredCase() string {
	if len(c.Routes) == 0 {
		return ""
	}
	for _, r := range c.Routes {
		if r.Fallback || r.Digest != "" || len(r.When) == 0 {
			return ""
		}
	}
	if field, values, ok := c.singleFieldGuards(); ok {
		return c.uncoveredValues(field, values)
	}
	var conds []string
	for _, r := range c.Routes {
		var parts []string
		for _, g := range r.When {
			parts = append(parts, fmt.Sprintf("%s %s %s", g.Field, g.Op, strings.Join(g.Values, " ")))
		}
		conds = append(conds, strings.Join(parts, " and "))
	}
	return "none of these holds: " + strings.Join(conds, "; ")
}

// singleFieldGuards reports whether every route has one is/in guard on one same field,
// and the values they take together.
func (c *Config) singleFieldGuards() (string, []string, bool) {
	var field string
	var values []string
	for _, r := range c.Routes {
		if len(r.When) != 1 {
			return "", nil, false
		}
		g := r.When[0]
		if (g.Op != GuardIs && g.Op != GuardIn) || (field != "" && g.Field != field) {
			return "", nil, false
		}
		field = g.Field
		for _, v := range g.Values {
			if !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
	}
	return field, values, true
}

// uncoveredValues names the values of field no route takes; "" when the field spec
// allows no other.
func (c *Config) uncoveredValues(field string, taken []string) string {
	for _, f := range c.Fields {
		if f.Name != field || len(f.OneOf) == 0 {
			continue
		}
		var left []string
		for _, v := range f.OneOf {
			if !slices.Contains(taken, v) {
				left = append(left, v)
			}
		}
		// Outside enforce mode, or when the field is optional, a post may carry any
		// value or none.
		if c.Mode != ModeEnforce && c.Mode != "" {
			break
		}
		if !f.Required && !slices.Contains(taken, "") {
			left = append(left, `"" (left empty)`)
		}
		if len(left) == 0 {
			return ""
		}
		return fmt.Sprintf("%s is %s", field, orList(left))
	}
	switch len(taken) {
	case 1:
		return fmt.Sprintf("%s is not %s", field, taken[0])
	case 2:
		return fmt.Sprintf("%s is neither %s nor %s", field, taken[0], taken[1])
	}
	return fmt.Sprintf("%s is none of %s", field, strings.Join(taken, ", "))
}

func orList(vs []string) string {
	if len(vs) == 1 {
		return vs[0]
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// checkCoverage warns, at load, of the posts no route would take (uncoveredCase): they
// are stored with the reason no_route_matched and raise the unrouted alert, but a
// `fallback` route is what makes sure someone hears of them.
func (c *Config) checkCoverage() {
	if uc := c.uncoveredCase(); uc != "" {
		c.warnings = append(c.warnings, fmt.Sprintf(
			"form %s: a post where %s takes no route and notifies nobody (stored as no_route_matched); add a `fallback` route to catch it",
			c.Form, uc))
	}
}
