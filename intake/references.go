package intake

import (
	"fmt"
	htmltemplate "html/template"
	"slices"
	"strings"
	texttemplate "text/template"
	"text/template/parse"
)

// Reference is one place a form's configuration reads a field by name: a `when field`
// guard, a {field.NAME} in a subject, a {{field "NAME"}} in a template. A reference to a
// field the post never carries renders empty or routes nowhere, silently; so a form that
// declares its fields has every reference checked against them at load time
// (CheckReference), and one that declares none is told at load time (Warnings) and
// checked on every post (templateempty.go).
type Reference struct {
	Field string
	// Route is the route's name, or AutoreplyRoute for the autoreply.
	Route string
	// Option is the option that holds the reference: when, subject, body_text,
	// body_html or text.
	Option string
	// At is the template position ("FILE:LINE:COL") for a reference in a template file,
	// "" for one in the Caddyfile.
	At string
}

// where names the reference for an error or a warning.
func (r Reference) where() string {
	s := "notify " + r.Route
	if r.Route == AutoreplyRoute {
		s = "autoreply"
	}
	s += ": " + r.Option
	if r.At != "" {
		s += " (template " + r.At + ")"
	}
	return s
}

// Declares reports whether the form declares its fields (any `field` line).
func (c *Config) Declares() bool { return len(c.Fields) > 0 }

// CheckReference reports why name cannot be a field the form's posts carry: a name
// starting with "_" or the honeypot's (never part of the stored data, so always empty),
// a file field (no text value), or, when the form declares its fields, a name it does
// not declare, with the declared names and the nearest of them. A form that declares
// no fields accepts any other name.
func (c *Config) CheckReference(name string) error {
	honeypot := c.Honeypot
	if honeypot == "" {
		honeypot = DefaultHoneypot
	}
	switch {
	case strings.HasPrefix(name, "_"):
		return fmt.Errorf("field %q: names starting with _ are instructions to the form service and never stored, so it always reads empty", name)
	case name == honeypot:
		return fmt.Errorf("field %q is the honeypot: a real visitor leaves it empty", name)
	}
	if !c.Declares() {
		return nil
	}
	var declared []string
	for _, f := range c.Fields {
		if f.Name == name {
			if f.File {
				return fmt.Errorf("field %q is a file upload and has no text value (templates list files in .Files)", name)
			}
			return nil
		}
		if !f.File {
			declared = append(declared, f.Name)
		}
	}
	msg := fmt.Sprintf("field %q is not declared%s (declared: %s)", name, c.inForm(), strings.Join(declared, ", "))
	if near := nearest(name, declared); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return fmt.Errorf("%s", msg)
}

// inForm is " in form NAME", or "" before the Caddy layer has named the form (from
// its path, after the block is parsed).
func (c *Config) inForm() string {
	if c.Form == "" {
		return ""
	}
	return " in form " + c.Form
}

// References lists every field reference of the form: its routes' guards, subjects and
// templates, and the autoreply's subject and templates. Templates are read at Provision,
// so before it only the Caddyfile's own references are listed.
func (c *Config) References() []Reference {
	var out []Reference
	for i := range c.Routes {
		r := &c.Routes[i]
		for _, g := range r.When {
			out = append(out, Reference{Field: g.Field, Route: r.Name, Option: "when"})
		}
		out = append(out, r.renderedReferences()...)
	}
	if a := c.Autoreply; a != nil {
		if a.route.Name != "" {
			out = append(out, a.route.renderedReferences()...)
		} else {
			out = append(out, subjectReferences(AutoreplyRoute, a.Subject)...)
		}
	}
	return out
}

// renderedReferences are the references a route's message prints: its subject and its
// parsed templates (not its guards, which choose the route and print nothing).
func (r *Route) renderedReferences() []Reference {
	out := subjectReferences(r.Name, r.Subject)
	if t := r.templates.text; t != nil {
		out = append(out, textTemplateReferences(r.Name, "body_text", t)...)
	}
	if t := r.templates.html; t != nil {
		out = append(out, htmlTemplateReferences(r.Name, "body_html", t)...)
	}
	if t := r.templates.chat; t != nil {
		out = append(out, textTemplateReferences(r.Name, "text", t)...)
	}
	return out
}

// SubjectFields returns the field names a subject template's {field.NAME} placeholders
// read, in order (render.go's placeholder is the one syntax).
func SubjectFields(subject string) []string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(subject, -1) {
		out = append(out, m[1])
	}
	return out
}

func subjectReferences(route, subject string) []Reference {
	var out []Reference
	for _, name := range SubjectFields(subject) {
		out = append(out, Reference{Field: name, Route: route, Option: "subject"})
	}
	return out
}

func textTemplateReferences(route, option string, t *texttemplate.Template) []Reference {
	var trees []*parse.Tree
	for _, tt := range t.Templates() {
		trees = append(trees, tt.Tree)
	}
	return treeReferences(route, option, trees)
}

func htmlTemplateReferences(route, option string, t *htmltemplate.Template) []Reference {
	var trees []*parse.Tree
	for _, tt := range t.Templates() {
		trees = append(trees, tt.Tree)
	}
	return treeReferences(route, option, trees)
}

// treeReferences finds every call of the templates' `field` helper (template.go) with a
// constant name, wherever it stands: {{field "x"}}, {{field "x" | upper}},
// {{truncate 80 (field "x")}}, {{if field "x"}}. A name computed at run time
// ({{field .Name}}) cannot be checked and is left alone.
func treeReferences(route, option string, trees []*parse.Tree) []Reference {
	var out []Reference
	var tree *parse.Tree
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.IfNode:
			walk(&n.BranchNode)
		case *parse.RangeNode:
			walk(&n.BranchNode)
		case *parse.WithNode:
			walk(&n.BranchNode)
		case *parse.BranchNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				walk(c)
			}
		case *parse.ChainNode:
			walk(n.Node)
		case *parse.CommandNode:
			if len(n.Args) >= 2 {
				if id, ok := n.Args[0].(*parse.IdentifierNode); ok && id.Ident == "field" {
					if s, ok := n.Args[1].(*parse.StringNode); ok {
						at, _ := tree.ErrorContext(n)
						out = append(out, Reference{Field: s.Text, Route: route, Option: option, At: at})
					}
				}
			}
			for _, a := range n.Args {
				walk(a)
			}
		}
	}
	for _, tree = range trees {
		if tree != nil && tree.Root != nil {
			walk(tree.Root)
		}
	}
	return out
}

// checkReferences is Provision's pass over References: an error for the first bad one
// of a form that declares its fields; for one that does not, a warning per reference
// (the post is checked when it comes, templateempty.go), and an error only for names
// that can never hold a value.
func (c *Config) checkReferences() error {
	for _, ref := range c.References() {
		if err := c.CheckReference(ref.Field); err != nil {
			return fmt.Errorf("%s: %w", ref.where(), err)
		}
		if !c.Declares() {
			c.warnings = append(c.warnings, fmt.Sprintf(
				"%s reads field %q, but form %s declares no fields, so it cannot be checked until a post comes: declare the form's fields with `field NAME`",
				ref.where(), ref.Field, c.Form))
		}
	}
	c.checkAutoreplyAddress()
	return nil
}

// checkAutoreplyAddress warns of an autoreply that can rarely reach anyone: it goes to
// `_replyto` or the `email` field (replyTo, parse.go), and a form that declares its
// fields without `email` leaves only `_replyto`, which a plain HTML form seldom sends.
func (c *Config) checkAutoreplyAddress() {
	if c.Autoreply == nil || !c.Declares() {
		return
	}
	for _, f := range c.Fields {
		if f.Name == "email" && !f.File {
			return
		}
	}
	c.warnings = append(c.warnings, fmt.Sprintf(
		"form %s: the autoreply goes to the `email` field or `_replyto`, and the form declares no field email, so only posts that send _replyto get a reply: declare `field email email`",
		c.Form))
}

// Warnings are what Provision found suspicious but not wrong (a reference it could not
// check, a case no route takes): the Caddy layer logs them at load. Never visitor data.
func (c *Config) Warnings() []string { return slices.Clone(c.warnings) }

// nearest is the candidate closest to name by edit distance, if it is close enough to
// be a typo: at most 2 edits, and fewer than name's length.
func nearest(name string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestDist && d < len([]rune(name)) {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
