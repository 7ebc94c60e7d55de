package intake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/internal/jsonw"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// placeholder matches {field.NAME} in a subject template.
var placeholder = regexp.MustCompile(`\{field\.([^{}]+)\}`)

// subject renders a route's subject. The operator's template wins; then the visitor's
// `_subject`; then a default naming the form. Field values are made single-line so a
// visitor can never inject a header through the subject.
func (c *Config) subject(route Route, data outbox.Fields, sp specials) string {
	var s string
	switch {
	case route.Subject != "":
		s = placeholder.ReplaceAllStringFunc(route.Subject, func(m string) string {
			// m is "{field.NAME}": the name is between the prefix and the brace.
			v, _ := data.Get(m[len("{field.") : len(m)-1])
			return singleLine(v)
		})
	case sp.subject != "":
		s = sp.subject
	default:
		s = "New submission to form " + c.Form
	}
	return truncateRunes(singleLine(s), maxSubjectLength)
}

// emailText lists the fields in form order, one "name: value" line each; continuation
// lines of multi-line values are indented so they cannot pass for another field.
func emailText(form string, sub *outbox.Submission) string {
	var b strings.Builder
	fmt.Fprintf(&b, "New submission to form %s\n\n", form)
	for _, f := range sub.Data {
		fmt.Fprintf(&b, "%s: %s\n", f.Name, strings.ReplaceAll(f.Value, "\n", "\n  "))
	}
	fmt.Fprintf(&b, "\nSubmission: %s\nReceived: %s\n", sub.ID, sub.CreatedAt.UTC().Format(time.RFC3339))
	return b.String()
}

// emailHTMLTemplate escapes every visitor value (html/template): a submitted <script>
// arrives as text.
var emailHTMLTemplate = template.Must(template.New("email").Parse(`<!DOCTYPE html>
<html><body style="font-family:sans-serif">
<p>New submission to form <strong>{{.Form}}</strong></p>
<table cellpadding="6" style="border-collapse:collapse">
{{- range .Data}}
<tr><th align="left" valign="top">{{.Name}}</th><td style="white-space:pre-wrap">{{.Value}}</td></tr>
{{- end}}
</table>
<p style="color:#666">Submission {{.ID}}<br>Received {{.Received}}</p>
</body></html>
`))

func emailHTML(form string, sub *outbox.Submission) (string, error) {
	var b bytes.Buffer
	err := emailHTMLTemplate.Execute(&b, map[string]any{
		"Form":     form,
		"Data":     sub.Data,
		"ID":       sub.ID.String(),
		"Received": sub.CreatedAt.UTC().Format(time.RFC3339),
	})
	if err != nil {
		return "", fmt.Errorf("render email html: %w", err)
	}
	return b.String(), nil
}

// webhookBody renders what a webhook receives; every webhook route sends the same body:
// {"id","form","status","created_at","data"}, data keeping the form's field order.
func webhookBody(sub *outbox.Submission) json.RawMessage {
	o := jsonw.NewObject(make([]byte, 0, 128+64*len(sub.Data)))
	o.String("id", sub.ID.String())
	o.String("form", sub.Form)
	o.String("status", string(sub.Status))
	p := o.Key("created_at") // RFC 3339 text has nothing to escape
	*p = append(sub.CreatedAt.UTC().AppendFormat(append(*p, '"'), time.RFC3339Nano), '"')
	p = o.Key("data")
	*p = sub.Data.AppendJSON(*p)
	return o.Close()
}
