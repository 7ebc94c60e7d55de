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
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
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
	Files    []TemplateFile // render.go
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

// routeTemplates holds a route's parsed templates: the email bodies, or a chat
// route's text.
type routeTemplates struct {
	text *texttemplate.Template
	html *htmltemplate.Template
	chat *texttemplate.Template
}

// parseTemplates reads and parses the route's body_text, body_html and text files, then
// runs each once on a sample submission, so a template that cannot parse or cannot run
// fails at provision with the file and line ("template: FILE:LINE: ...").
func (r *Route) parseTemplates() error {
	if r.Channel != outbox.ChannelEmail && (r.BodyText != "" || r.BodyHTML != "") {
		return fmt.Errorf("body_text and body_html are for email routes")
	}
	if r.Text != "" && !r.Channel.IsChat() {
		return fmt.Errorf("text is for chat routes (telegram, slack, discord, teams)")
	}
	if r.Content == ContentLink && (r.BodyText != "" || r.BodyHTML != "") {
		// The link-only email exists to keep visitor data out of mailboxes; a body
		// template would bring it back.
		return fmt.Errorf("content link takes no body_text or body_html")
	}
	sample := TemplateData{Form: "form", ID: "00000000-0000-0000-0000-000000000000", Received: time.Unix(0, 0).UTC(),
		Fields: outbox.Fields{{Name: "name", Value: "value"}},
		Files:  []TemplateFile{{Field: "file", Name: "file.pdf", Size: "1.0 kB", Type: "application/pdf", SHA256: "0"}}}
	var err error
	if r.BodyText != "" {
		r.templates.text, err = loadTemplate("body_text", r.BodyText, func(src string) (*texttemplate.Template, error) {
			return texttemplate.New(r.BodyText).Funcs(templateFuncs(nil)).Parse(src)
		}, func(t *texttemplate.Template) error {
			_, err := executeText(t, sample)
			return err
		})
		if err != nil {
			return err
		}
	}
	if r.BodyHTML != "" {
		r.templates.html, err = loadTemplate("body_html", r.BodyHTML, func(src string) (*htmltemplate.Template, error) {
			return htmltemplate.New(r.BodyHTML).Funcs(templateFuncs(nil)).Parse(src)
		}, func(t *htmltemplate.Template) error {
			_, err := executeHTML(t, sample)
			return err
		})
		if err != nil {
			return err
		}
	}
	if r.Text != "" {
		r.templates.chat, err = loadTemplate("text", r.Text, func(src string) (*texttemplate.Template, error) {
			return parseChatTemplate(r.Text, src)
		}, func(t *texttemplate.Template) error {
			parts, err := renderChatTemplate(t, ChatTemplateData{Form: sample.Form, ID: sample.ID, Received: sample.Received,
				Fields: sample.Fields, Files: sample.Files}, func(string) string { return "" })
			if err == nil {
				_, err = chatText(*r, chat.Submission{Form: sample.Form}, parts)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// TemplateFailure is one of a route's templates failing on one submission. Its text is
// the template engine's (the file, the line, the action and a type), never a value.
type TemplateFailure struct {
	Route    string `json:"route"`
	Option   string `json:"option"`
	Template string `json:"template"`
	Error    string `json:"error"`
}

// renderBodies renders the route's own templates over the built-in bodies. A template
// that fails on one submission (it ran on a sample at provision, so this is rare) keeps
// the built-in body, and the failure is returned to be recorded: the lead still goes
// out, whole, rather than being refused.
func (r *Route) renderBodies(d TemplateData, text, html string) (string, string, []TemplateFailure) {
	var failed []TemplateFailure
	if t := r.templates.text; t != nil {
		if s, err := executeText(t, d); err != nil {
			failed = append(failed, TemplateFailure{Route: r.Name, Option: "body_text", Template: r.BodyText, Error: err.Error()})
		} else {
			text = s
		}
	}
	if t := r.templates.html; t != nil {
		if s, err := executeHTML(t, d); err != nil {
			failed = append(failed, TemplateFailure{Route: r.Name, Option: "body_html", Template: r.BodyHTML, Error: err.Error()})
		} else {
			html = s
		}
	}
	return text, html, failed
}

// executeText and executeHTML execute a clone with the submission's helpers, never the
// parsed template itself: it is shared by concurrent posts, and an html/template that
// has executed can no longer be cloned.
func executeText(t *texttemplate.Template, d TemplateData) (string, error) {
	c, err := t.Clone()
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	err = c.Funcs(templateFuncs(d.Fields)).Execute(&b, d)
	return b.String(), err
}

func executeHTML(t *htmltemplate.Template, d TemplateData) (string, error) {
	c, err := t.Clone()
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	err = c.Funcs(templateFuncs(d.Fields)).Execute(&b, d)
	return b.String(), err
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
