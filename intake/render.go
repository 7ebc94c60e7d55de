package intake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/internal/jsonw"
	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
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
	// The visitor's _subject, and any control the operator's text holds, lose their bidi
	// controls here too: the header rules strip them again at send (providers/headers.go).
	return truncateRunes(singleLine(safetext.StripBidi(s)), maxSubjectLength)
}

// testSubject marks a test submission's subject (chat.TestMark), so its reader does not
// take it for a lead; the mark survives the length bound.
func testSubject(sub *outbox.Submission, s string) string {
	if !sub.Test {
		return s
	}
	return truncateRunes(chat.TestMark+s, maxSubjectLength)
}

// replyToInBody returns the visitor's reply address when the body must carry it: the
// header rules (providers/headers.go) keep it out of Reply-To (a non-ASCII local part
// needs SMTPUTF8) and no field shows it already, as when it came from `_replyto`.
// Without it the reader would have no way to answer the lead.
func replyToInBody(replyTo string, data outbox.Fields) string {
	if _, ok := providers.ReplyToHeader(replyTo); replyTo == "" || ok {
		return ""
	}
	for _, f := range data {
		if f.Value == replyTo {
			return ""
		}
	}
	return replyTo
}

// emailText lists the fields in form order, one "name: value" line each; continuation
// lines of multi-line values are indented so they cannot pass for another field.
// replyTo, when not empty, is listed after the fields (see replyToInBody); link, when
// not empty, is the submission's page in the inbox.
func emailText(form string, sub *outbox.Submission, replyTo, link string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "New submission to form %s\n\n", form)
	for _, f := range sub.Data {
		fmt.Fprintf(&b, "%s: %s\n", f.Name, strings.ReplaceAll(f.Value, "\n", "\n  "))
	}
	if files := deliveredFiles(sub); len(files) > 0 {
		b.WriteString("\nFiles:\n")
		for _, f := range files {
			fmt.Fprintf(&b, "  %s: %s\n", f.Field, fileSummary(f))
		}
	}
	if replyTo != "" {
		fmt.Fprintf(&b, "\nReply to: %s\n", replyTo)
	}
	fmt.Fprintf(&b, "\nSubmission: %s\nReceived: %s\n", sub.ID, sub.CreatedAt.UTC().Format(time.RFC3339))
	if link != "" {
		fmt.Fprintf(&b, "Open in the inbox: %s\n", link)
	}
	return b.String()
}

// inboxLink is the submission's page in the operator's inbox ("" without inbox_url).
func (c *Config) inboxLink(sub *outbox.Submission) string {
	if c.InboxURL == "" {
		return ""
	}
	return strings.TrimRight(c.InboxURL, "/") + "/submissions/" + sub.ID.String()
}

// linkEmailTemplate is the link-only email: the form, the id and the link, nothing the
// visitor typed.
var linkEmailTemplate = template.Must(template.New("link").Parse(`<!DOCTYPE html>
<html><body style="font-family:sans-serif">
<p>New submission to form <strong>{{.Form}}</strong></p>
<p><a href="{{.Link}}">Open it in the inbox</a></p>
<p style="color:#666">Submission {{.ID}}<br>Received {{.Received}}</p>
</body></html>
`))

// linkEmail renders a `content link` route's email. It has no Reply-To and the default
// subject: the visitor's address and a subject template's fields are visitor data too.
// link is the submission's inbox page (see inboxLink).
func (c *Config) linkEmail(sub *outbox.Submission, link string) (*outbox.Payload, error) {
	received := sub.CreatedAt.UTC().Format(time.RFC3339)
	var b bytes.Buffer
	if err := linkEmailTemplate.Execute(&b, map[string]any{"Form": c.Form, "Link": link, "ID": sub.ID.String(), "Received": received}); err != nil {
		return nil, fmt.Errorf("render link email: %w", err)
	}
	text := fmt.Sprintf("New submission to form %s\n\nOpen it in the inbox: %s\n\nSubmission: %s\nReceived: %s\n",
		c.Form, link, sub.ID, received)
	return &outbox.Payload{Subject: truncateRunes(singleLine("New submission to form "+c.Form), maxSubjectLength),
		Text: text, HTML: b.String()}, nil
}

// emailHTMLTemplate escapes every visitor value (html/template): a submitted <script>
// arrives as text. Each value shown as text is in a <bdi> element, HTML's isolate: a
// right-to-left name cannot reorder the table's labels around it (its bidi controls
// are already gone, shownSubmission).
var emailHTMLTemplate = template.Must(template.New("email").Parse(`<!DOCTYPE html>
<html><body style="font-family:sans-serif">
<p>New submission to form <strong>{{.Form}}</strong></p>
<table cellpadding="6" style="border-collapse:collapse">
{{- range .Data}}
<tr><th align="left" valign="top"><bdi>{{.Name}}</bdi></th><td style="white-space:pre-wrap"><bdi>{{.Value}}</bdi></td></tr>
{{- end}}
</table>
{{- with .Files}}
<p>Files:</p>
<ul>
{{- range .}}
<li><bdi>{{.Field}}</bdi>: <bdi>{{.Name}}</bdi> ({{.Size}}, {{.Type}})</li>
{{- end}}
</ul>
{{- end}}
{{- with .ReplyTo}}
<p>Reply to: <a href="mailto:{{.}}">{{.}}</a></p>
{{- end}}
<p style="color:#666">Submission {{.ID}}<br>Received {{.Received}}</p>
{{- with .Link}}
<p><a href="{{.}}">Open in the inbox</a></p>
{{- end}}
</body></html>
`))

func emailHTML(form string, sub *outbox.Submission, replyTo, link string) (string, error) {
	var b bytes.Buffer
	err := emailHTMLTemplate.Execute(&b, map[string]any{
		"Form":     form,
		"ReplyTo":  replyTo,
		"Data":     sub.Data,
		"ID":       sub.ID.String(),
		"Received": sub.CreatedAt.UTC().Format(time.RFC3339),
		"Link":     link,
		"Files":    fileLines(sub),
	})
	if err != nil {
		return "", fmt.Errorf("render email html: %w", err)
	}
	return b.String(), nil
}

// webhookBody renders what a webhook receives; every webhook route sends the same body:
// {"id","form","status","created_at","data"}, data keeping the form's field order.
//
// With files, "files" lists each one's metadata (appendFilesJSON), with its signed
// download link when fileURL is set (the App's files_url).
func webhookBody(sub *outbox.Submission, fileURL func(uuid.UUID) string) json.RawMessage {
	o := jsonw.NewObject(make([]byte, 0, 128+64*len(sub.Data)))
	o.String("id", sub.ID.String())
	o.String("form", sub.Form)
	o.String("status", string(sub.Status))
	if sub.Test {
		// A receiver tells a test submission (a `_test` post, a canary) from a lead.
		o.Bool("test", true)
	}
	p := o.Key("created_at") // RFC 3339 text has nothing to escape
	*p = append(sub.CreatedAt.UTC().AppendFormat(append(*p, '"'), time.RFC3339Nano), '"')
	p = o.Key("data")
	*p = sub.Data.AppendJSON(*p)
	if files := deliveredFiles(sub); len(files) > 0 {
		p = o.Key("files")
		*p = appendFilesJSON(*p, files, fileURL)
	}
	return o.Close()
}

// deliveredFiles are the files a notification tells of: those that broke no rule. A
// rejected file is kept for the inbox only (docs/design.md, "Files").
func deliveredFiles(sub *outbox.Submission) []outbox.File {
	var out []outbox.File
	for _, f := range sub.Files {
		if f.Rejected == "" {
			out = append(out, f)
		}
	}
	return out
}

// TemplateFile is one uploaded file as the e-mail and chat templates see it (.Files):
// the form field, the sanitised name, the size in words ("390 kB"), the sniffed type
// and the SHA-256. A rejected file is not among them.
type TemplateFile struct{ Field, Name, Size, Type, SHA256 string }

func fileLines(sub *outbox.Submission) []TemplateFile {
	var out []TemplateFile
	for _, f := range deliveredFiles(sub) {
		out = append(out, TemplateFile{f.Field, f.Name, humanize.Bytes(uint64(f.Size)), f.SniffedType, f.SHA256})
	}
	return out
}

// appendFilesJSON appends the files' metadata as a JSON array: id, field, name, size,
// type (sniffed), sha256 and, with fileURL, the signed link; never the content.
func appendFilesJSON(dst []byte, files []outbox.File, fileURL func(uuid.UUID) string) []byte {
	dst = append(dst, '[')
	for i, f := range files {
		if i > 0 {
			dst = append(dst, ',')
		}
		o := jsonw.NewObject(dst)
		o.String("id", f.ID.String())
		o.String("field", f.Field)
		o.String("name", f.Name)
		p := o.Key("size")
		*p = strconv.AppendInt(*p, f.Size, 10)
		o.String("type", f.SniffedType)
		o.String("sha256", f.SHA256)
		if fileURL != nil {
			o.String("url", fileURL(f.ID))
		}
		dst = o.Close()
	}
	return append(dst, ']')
}

// fileLink returns the signer of file links for a submission planned at now, or nil
// without files_url.
func (c *Config) fileLink(now time.Time) func(uuid.UUID) string {
	if c.FileURL == nil {
		return nil
	}
	return func(id uuid.UUID) string { return c.FileURL(id, now) }
}

// fileSummary is one file as a notification line shows it: name, size and type.
func fileSummary(f outbox.File) string {
	return fmt.Sprintf("%s (%s, %s)", f.Name, humanize.Bytes(uint64(f.Size)), f.SniffedType)
}
