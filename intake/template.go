package intake

import (
	"bytes"
	"fmt"
	htmltemplate "html/template"
	"os"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TemplateData is what an operator's body_text and body_html templates see:
//
//	{{.Form}} {{.ID}} {{.Link}} {{.Received}}   the form, the submission id, the inbox
//	                                            link ("" without inbox_url), the time
//	{{range .Fields}}{{.Name}}: {{.Value}}{{end}} every field, in form order
//	{{field "email"}}                           one field's value ("" when not sent)
//	{{lower .Form}} {{upper .Form}} {{trim ...}} {{truncate 80 (field "message")}}
//
// html/template escapes every value for where it appears in body_html; body_text is
// plain text and written as it is.
type TemplateData struct {
	Form     string
	ID       string
	Link     string
	Received time.Time
	Fields   outbox.Fields
}

// templateFuncs are the helpers both kinds of template get. field is bound per
// submission at execution; the one here only lets templates parse.
func templateFuncs(data outbox.Fields) map[string]any {
	return map[string]any{
		"field": func(name string) string { v, _ := data.Get(name); return v },
		"lower": strings.ToLower,
		"upper": strings.ToUpper,
		"trim":  strings.TrimSpace,
		"truncate": func(n int, s string) string {
			return truncateRunes(s, n)
		},
	}
}

// emailTemplates holds a route's parsed body templates.
type emailTemplates struct {
	text *texttemplate.Template
	html *htmltemplate.Template
}

// parseTemplates reads and parses the route's body_text and body_html files, then runs
// each once on a sample submission, so a template that cannot parse or cannot run
// fails at provision with the file and line ("template: FILE:LINE: ...").
func (r *Route) parseTemplates() error {
	if r.Channel != outbox.ChannelEmail && (r.BodyText != "" || r.BodyHTML != "") {
		return fmt.Errorf("body_text and body_html are for email routes")
	}
	if r.Content == ContentLink && (r.BodyText != "" || r.BodyHTML != "") {
		// The link-only email exists to keep visitor data out of mailboxes; a body
		// template would bring it back.
		return fmt.Errorf("content link takes no body_text or body_html")
	}
	sample := TemplateData{Form: "form", ID: "00000000-0000-0000-0000-000000000000", Received: time.Unix(0, 0).UTC(),
		Fields: outbox.Fields{{Name: "name", Value: "value"}}}
	var err error
	if r.BodyText != "" {
		r.templates.text, err = loadTemplate("body_text", r.BodyText, func(src string) (*texttemplate.Template, error) {
			return texttemplate.New(r.BodyText).Funcs(templateFuncs(nil)).Parse(src)
		}, func(t *texttemplate.Template) error { return dryRunText(t, sample) })
		if err != nil {
			return err
		}
	}
	if r.BodyHTML != "" {
		r.templates.html, err = loadTemplate("body_html", r.BodyHTML, func(src string) (*htmltemplate.Template, error) {
			return htmltemplate.New(r.BodyHTML).Funcs(templateFuncs(nil)).Parse(src)
		}, func(t *htmltemplate.Template) error { return dryRunHTML(t, sample) })
		if err != nil {
			return err
		}
	}
	return nil
}

// renderBodies renders the route's own templates over the built-in bodies. A template
// that fails on one submission (it ran on a sample at provision, so this is rare) keeps
// the built-in body: the lead still goes out, whole, rather than being refused.
func (r *Route) renderBodies(d TemplateData, text, html string) (string, string) {
	if t := r.templates.text; t != nil {
		var b bytes.Buffer
		// Funcs on a clone: the parsed template is shared by concurrent posts.
		if c, err := t.Clone(); err == nil && c.Funcs(templateFuncs(d.Fields)).Execute(&b, d) == nil {
			text = b.String()
		}
	}
	if t := r.templates.html; t != nil {
		var b bytes.Buffer
		if c, err := t.Clone(); err == nil && c.Funcs(templateFuncs(d.Fields)).Execute(&b, d) == nil {
			html = b.String()
		}
	}
	return text, html
}

// dryRunText and dryRunHTML execute a clone, never the parsed template itself: an
// html/template that has executed can no longer be cloned, and every post clones it.
func dryRunText(t *texttemplate.Template, d TemplateData) error {
	c, err := t.Clone()
	if err != nil {
		return err
	}
	return c.Funcs(templateFuncs(d.Fields)).Execute(new(bytes.Buffer), d)
}

func dryRunHTML(t *htmltemplate.Template, d TemplateData) error {
	c, err := t.Clone()
	if err != nil {
		return err
	}
	return c.Funcs(templateFuncs(d.Fields)).Execute(new(bytes.Buffer), d)
}

// loadTemplate reads the file at path, parses it and runs it on the sample; errors
// name the option, and the template's own errors the file and line.
func loadTemplate[T any](option, path string, parse func(src string) (T, error), dryRun func(T) error) (T, error) {
	var zero T
	src, err := os.ReadFile(path)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", option, err)
	}
	t, err := parse(string(src))
	if err == nil {
		err = dryRun(t)
	}
	if err != nil {
		return zero, fmt.Errorf("%s: %w", option, err)
	}
	return t, nil
}
