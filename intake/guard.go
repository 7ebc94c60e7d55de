package intake

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Guard operators (Guard.Op).
const (
	GuardIs      = "is"      // the value equals Values[0]
	GuardIn      = "in"      // the value equals one of Values
	GuardMatches = "matches" // Values[0], a Go (RE2) regular expression, matches somewhere in the value
)

// Guard is one `when field NAME is|in|matches ...` condition of a route. It reads the
// field's stored value (a repeated field's values joined by ", "); a field the post did
// not send reads as empty. Guards only choose among the routes the Caddyfile lists:
// recipients never come from the visitor.
type Guard struct {
	Field  string   `json:"field"`
	Op     string   `json:"op"`
	Values []string `json:"values"`

	re *regexp.Regexp // compiled by check, for GuardMatches
}

// check validates the guard and compiles its regular expression, so a bad guard fails
// at provision rather than on a visitor's post.
func (g *Guard) check() error {
	if g.Field == "" {
		return fmt.Errorf("when: field name is empty")
	}
	switch g.Op {
	case GuardIs, GuardMatches:
		if len(g.Values) != 1 {
			return fmt.Errorf("when field %s %s: want exactly one value, got %d", g.Field, g.Op, len(g.Values))
		}
	case GuardIn:
		if len(g.Values) == 0 {
			return fmt.Errorf("when field %s in: want at least one value", g.Field)
		}
	default:
		return fmt.Errorf("when field %s: unknown operator %q (want is, in or matches)", g.Field, g.Op)
	}
	if g.Op == GuardMatches {
		re, err := regexp.Compile(g.Values[0])
		if err != nil {
			return fmt.Errorf("when field %s matches: %w", g.Field, err)
		}
		g.re = re
	}
	return nil
}

// holds reports whether the guard holds for the submitted data.
func (g *Guard) holds(data outbox.Fields) bool {
	v, _ := data.Get(g.Field)
	switch g.Op {
	case GuardIs:
		return v == g.Values[0]
	case GuardIn:
		return slices.Contains(g.Values, v)
	case GuardMatches:
		return g.re.MatchString(v)
	}
	return false
}

// CheckGuards validates a route's guards; the Caddyfile parser calls it so that an
// error names the line.
func (r *Route) CheckGuards() error {
	if r.Fallback && len(r.When) > 0 {
		return fmt.Errorf("a fallback route takes no guards: it receives what no other route matched")
	}
	for i := range r.When {
		if err := r.When[i].check(); err != nil {
			return err
		}
	}
	return nil
}

// matches reports whether every guard of the route holds.
func (r *Route) matches(data outbox.Fields) bool {
	for i := range r.When {
		if !r.When[i].holds(data) {
			return false
		}
	}
	return true
}

// routesFor returns the routes a submission takes: every non-fallback route whose
// guards hold, or, when none does, the fallback routes. A digest route is never among
// them (it plans nothing: the digest closer lists the submission, outbox/digest), and a
// form with one never leaves a submission unrouted. unrouted reports a form with
// routes of which the submission took none: it is still stored, with the
// submission.unrouted event (and, when accepted, the reason no_route_matched), so an
// operator sees it was sent nowhere rather than losing it silently.
//
// On the hot path (every route taken, the usual form without guards) it returns
// c.Routes itself, read-only, instead of copying every Route per post; a copy starts
// only at the first route not taken.
func (c *Config) routesFor(data outbox.Fields) (routes []Route, unrouted bool) {
	missed := false
	for i := range c.Routes {
		r := &c.Routes[i]
		if !r.Fallback && r.Digest == "" && r.matches(data) {
			if missed {
				routes = append(routes, *r)
			}
			continue
		}
		if !missed {
			missed = true
			routes = append([]Route(nil), c.Routes[:i]...)
		}
	}
	if !missed {
		return c.Routes, false
	}
	if len(routes) == 0 {
		for i := range c.Routes {
			if c.Routes[i].Fallback {
				routes = append(routes, c.Routes[i])
			}
		}
	}
	return routes, len(routes) == 0 && len(c.Routes) > 0 && !c.hasDigest()
}

// DeliversEveryPost reports whether every accepted post of the form that is not stored
// as no_route_matched gets at least one delivery, so that one without any is a loss (the
// lead ledger's check, outbox/ledger_report.go). It follows routesFor: a form with no
// route (store_only) plans nothing; a form with a digest route may leave a post with no
// immediate route unflagged, unless a route without guards, or a fallback route, always
// takes it.
func (c *Config) DeliversEveryPost() bool {
	immediate, always := false, false
	for i := range c.Routes {
		r := &c.Routes[i]
		if r.Digest != "" {
			continue
		}
		immediate = true
		if r.Fallback || len(r.When) == 0 {
			always = true
		}
	}
	return immediate && (always || !c.hasDigest())
}
