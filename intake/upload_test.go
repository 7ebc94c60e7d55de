package intake

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// applyConfig is the form of issue 19's contract: a required PDF and up to two photos.
func applyConfig(t testing.TB) *Config {
	t.Helper()
	c := &Config{
		Form: "apply",
		Fields: []FieldSpec{
			{Name: "name", Required: true},
			{Name: "cv", File: true, Required: true, MaxFileSize: 600 << 10, Types: []string{"application/pdf"}},
			{Name: "photos", File: true, MaxFiles: 2, MaxFileSize: 100 << 10, Types: []string{"image/png", "image/jpeg"}},
		},
		MaxBodyBytes: 2 << 20,
		Routes:       []Route{{Channel: outbox.ChannelEmail, To: []string{"hr@example.com"}}, {Channel: outbox.ChannelWebhook, URL: "https://crm.example.com/hook", Secret: "whsec_c2VjcmV0"}},
		IPHashKey:    []byte("test-key"),
		DedupeOff:    true,
	}
	if err := c.Provision(); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return c
}

// part is one multipart part; a part with a filename is a file.
type part struct {
	name, filename, ctype string
	body                  []byte
}

func textPart(name, value string) part { return part{name: name, body: []byte(value)} }

func filePart(name, filename, ctype string, body []byte) part {
	return part{name: name, filename: filename, ctype: ctype, body: body}
}

func postParts(t testing.TB, parts ...part) *http.Request {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		// Quoted as browsers do: UTF-8 as it is, only the quote and the backslash escaped.
		quote := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace
		cd := `form-data; name="` + quote(p.name) + `"`
		if p.filename != "" {
			cd += `; filename="` + quote(p.filename) + `"`
			h.Set("Content-Type", p.ctype)
		}
		h.Set("Content-Disposition", cd)
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(p.body)
	}
	mw.Close()
	r := httptest.NewRequest(http.MethodPost, "/apply", &b)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	r.Header.Set("Accept", "application/json")
	return r
}

var (
	pdf  = append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("pdf body "), 40000)...) // 360 kB: past uploadMemory
	png  = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1, 2, 3}, 1000)...)
	jpeg = append([]byte("\xff\xd8\xff\xe0"), bytes.Repeat([]byte{9}, 500)...)
)

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// A PDF and a photo are stored with the submission, content byte for byte, and the
// e-mail and the webhook list them; no temporary file is left.
func TestUploadStoredWithItsSubmission(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s := openRealStore(t)
	c := applyConfig(t)
	w := s.serve(t, c, postParts(t, textPart("name", "Ada"),
		filePart("cv", "Ada CV.pdf", "application/pdf", pdf),
		filePart("photos", "me.png", "image/jpeg", png),          // declared wrongly: recorded, not trusted
		filePart("photos", "", "application/octet-stream", nil))) // an empty file input
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"status":"accepted"`) {
		t.Fatalf("answer %d %s, want 200 accepted", w.Code, w.Body)
	}
	var ans struct{ ID string }
	json.Unmarshal(w.Body.Bytes(), &ans)
	rows := s.rows(t)
	r := rows[ans.ID]
	if r.Status != "accepted" || r.Data != `{"name":"Ada"}` {
		t.Fatalf("row %+v, want accepted with only the text field in data", r)
	}
	sub := mustUUID(t, ans.ID)
	files, err := s.SubmissionFiles(t.Context(), sub)
	if err != nil || len(files) != 2 {
		t.Fatalf("files = %+v, %v; want 2", files, err)
	}
	want := []struct {
		field, name, declared, sniffed string
		content                        []byte
	}{
		{"cv", "Ada CV.pdf", "application/pdf", "application/pdf", pdf},
		{"photos", "me.png", "image/jpeg", "image/png", png},
	}
	for i, wf := range want {
		f := files[i]
		if f.Field != wf.field || f.Name != wf.name || f.DeclaredType != wf.declared || f.SniffedType != wf.sniffed ||
			f.Size != int64(len(wf.content)) || f.SHA256 != hexSHA(wf.content) || f.Rejected != "" || !f.HasContent {
			t.Errorf("file %d = %+v, want %s %q declared %s sniffed %s, %d bytes", i, f, wf.field, wf.name, wf.declared, wf.sniffed, len(wf.content))
		}
		var buf bytes.Buffer
		if _, err := s.CopyFile(t.Context(), f.ID, &buf); err != nil || !bytes.Equal(buf.Bytes(), wf.content) {
			t.Errorf("file %d content: %d bytes, %v; want the %d posted", i, buf.Len(), err, len(wf.content))
		}
	}
	ds, _ := s.ListDeliveries(t.Context(), sub)
	for _, d := range ds {
		if d.Status != outbox.DeliveryPending {
			t.Errorf("delivery %s is %s, want pending", d.Route, d.Status)
		}
		p := payloadOf(t, d)
		switch d.Channel {
		case outbox.ChannelEmail:
			if !strings.Contains(p.Text, "Files:\n  cv: Ada CV.pdf (360 kB, application/pdf)\n  photos: me.png (3.0 kB, image/png)\n") {
				t.Errorf("e-mail text does not list the files:\n%s", p.Text)
			}
			if !strings.Contains(p.HTML, "<li><bdi>cv</bdi>: <bdi>Ada CV.pdf</bdi> (360 kB, application/pdf)</li>") {
				t.Errorf("e-mail HTML does not list the files:\n%s", p.HTML)
			}
		case outbox.ChannelWebhook:
			var body struct {
				Files []map[string]any `json:"files"`
			}
			json.Unmarshal(p.Body, &body)
			if len(body.Files) != 2 || body.Files[0]["sha256"] != hexSHA(pdf) || body.Files[0]["size"] != float64(len(pdf)) ||
				body.Files[1]["type"] != "image/png" || body.Files[0]["id"] != files[0].ID.String() {
				t.Errorf("webhook files = %v", body.Files)
			}
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func mustUUID(t *testing.T, id string) uuid.UUID {
	t.Helper()
	u, err := uuid.Parse(id)
	if err != nil {
		t.Fatalf("id %q: %v", id, err)
	}
	return u
}

// Every hostile or broken file is answered truthfully and stored as specified: the post
// quarantined with the file kept (for the inbox) and its rule recorded, no delivery
// pending, nothing the notification would carry.
func TestHostileUploads(t *testing.T) {
	name := textPart("name", "Ada")
	goodCV := filePart("cv", "cv.pdf", "application/pdf", []byte("%PDF-1.4 ok"))
	cases := []struct {
		name   string
		parts  []part
		code   int
		status outbox.SubmissionStatus
		reason string
		rules  []string // each file's Rejected, in post order
		names  []string // each file's stored name, when checked
		sniff  string   // the first file's sniffed type, when checked
		answer string   // in the JSON answer
	}{
		{name: "HTML renamed .pdf", parts: []part{name, filePart("cv", "cv.pdf", "application/pdf", []byte("<!DOCTYPE html><script>alert(1)</script>"))},
			code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonFileRejected, rules: []string{outbox.FileTypeNotAllowed},
			sniff: "text/html", answer: `cv: file \"cv.pdf\" is text/html, which is not accepted`},
		{name: "SVG sent as a PNG photo", parts: []part{name, goodCV, filePart("photos", "x.png", "image/png", []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`))},
			code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonFileRejected, rules: []string{"", outbox.FileTypeNotAllowed}},
		{name: "executable", parts: []part{name, filePart("cv", "cv.pdf", "application/pdf", []byte("MZ\x90\x00rest"))},
			code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonFileRejected, rules: []string{outbox.FileTypeNotAllowed}, sniff: "application/x-msdownload"},
		{name: "path traversal and bidi in the file name", parts: []part{name,
			filePart("cv", `..\..\windows\cv`+"\u202Efdp.exe", "application/pdf", []byte("%PDF-1.4 a")),
			filePart("photos", "../../../etc/.passwd.png", "image/png", png)},
			code: 200, status: outbox.SubmissionAccepted, rules: []string{"", ""}, names: []string{"cvfdp.exe", "passwd.png"}},
		{name: "zip bomb style name", parts: []part{name, filePart("cv", strings.Repeat("A", 300)+".pdf", "application/pdf", []byte("%PDF-1.4 a"))},
			code: 200, status: outbox.SubmissionAccepted, rules: []string{""}, names: []string{strings.Repeat("A", 146) + ".pdf"}},
		{name: "0-byte file", parts: []part{name, filePart("cv", "cv.pdf", "application/pdf", nil)},
			code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonFileRejected, rules: []string{outbox.FileEmpty}},
		{name: "over max_size", parts: []part{name, goodCV, filePart("photos", "big.png", "image/png", append(png, make([]byte, 100<<10)...))},
			code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonFileRejected, rules: []string{"", outbox.FileTooLarge}},
		{name: "too many files", parts: []part{name, goodCV, filePart("photos", "1.png", "image/png", png), filePart("photos", "2.jpg", "image/jpeg", jpeg), filePart("photos", "3.png", "image/png", png)},
			code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonFileRejected, rules: []string{"", "", "", outbox.FileTooMany},
			answer: "photos: takes at most 2 files"},
		{name: "file for a text field", parts: []part{textPart("name", "Ada"), goodCV, filePart("note", "n.txt", "text/plain", []byte("hi"))},
			code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonFileRejected, rules: []string{"", outbox.FileNotAFileField}},
		{name: "required file missing", parts: []part{name},
			code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonSchemaViolation, answer: "cv is required"},
		{name: "text for a file field", parts: []part{name, textPart("cv", "see attached")},
			code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonSchemaViolation, answer: "cv must be a file upload"},
		{name: "spam keeps metadata only", parts: []part{name, textPart("_gotcha", "bot"), goodCV},
			code: 200, status: outbox.SubmissionSpam, reason: outbox.ReasonHoneypot, rules: []string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openRealStore(t)
			c := applyConfig(t)
			w := s.serve(t, c, postParts(t, tc.parts...))
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.answer) {
				t.Fatalf("answer %d %s, want %d with %q", w.Code, w.Body, tc.code, tc.answer)
			}
			var ans struct{ ID string }
			json.Unmarshal(w.Body.Bytes(), &ans)
			r := s.rows(t)[ans.ID]
			if r.Status != string(tc.status) || r.Reason != tc.reason {
				t.Fatalf("stored %s/%s, want %s/%s", r.Status, r.Reason, tc.status, tc.reason)
			}
			files, err := s.SubmissionFiles(t.Context(), mustUUID(t, ans.ID))
			if err != nil || len(files) != len(tc.rules) {
				t.Fatalf("files = %+v, %v; want %d", files, err, len(tc.rules))
			}
			for i, f := range files {
				if f.Rejected != tc.rules[i] {
					t.Errorf("file %d rejected %q, want %q", i, f.Rejected, tc.rules[i])
				}
				if tc.names != nil && f.Name != tc.names[i] {
					t.Errorf("file %d name %q, want %q", i, f.Name, tc.names[i])
				}
				var buf bytes.Buffer
				s.CopyFile(t.Context(), f.ID, &buf)
				if spam := tc.status == outbox.SubmissionSpam; f.HasContent == spam || int64(buf.Len()) != map[bool]int64{false: f.Size, true: 0}[spam] {
					t.Errorf("file %d: has content %v with %d bytes stored (size %d); spam keeps none, the rest all", i, f.HasContent, buf.Len(), f.Size)
				}
			}
			if tc.sniff != "" && files[0].SniffedType != tc.sniff {
				t.Errorf("sniffed %q, want %q", files[0].SniffedType, tc.sniff)
			}
			rejected := 0
			for _, rule := range tc.rules {
				if rule != "" {
					rejected++
				}
			}
			if hasEvent := strings.Contains(strings.Join(r.Events, " "), outbox.EventFileRejected); hasEvent != (rejected > 0) {
				t.Errorf("events %v: file.rejected present %v, want %v", r.Events, hasEvent, rejected > 0)
			}
			for _, d := range r.Deliveries {
				if tc.status != outbox.SubmissionAccepted && !strings.Contains(d, " skipped ") {
					t.Errorf("delivery %q of a %s post, want skipped", d, tc.status)
				}
			}
		})
	}
}

// The file.rejected event names files by id, field and rule, never by the visitor's name.
func TestFileRejectedEventHoldsNoFileName(t *testing.T) {
	c := applyConfig(t)
	res := mustParse(t, c, postParts(t, textPart("name", "Ada"), filePart("cv", "secret-name.pdf", "application/pdf", []byte("<html>"))))
	defer res.Close()
	var ev *outbox.Event
	for i := range res.Submission.Events {
		if res.Submission.Events[i].Kind == outbox.EventFileRejected {
			ev = &res.Submission.Events[i]
		}
	}
	if ev == nil {
		t.Fatal("no file.rejected event")
	}
	want := fmt.Sprintf(`{"files":[{"field":"cv","file_id":"%s","rule":"type_not_allowed"}],"form":"apply"}`, res.Submission.Files[0].ID)
	if string(ev.Data) != want {
		t.Errorf("event data %s, want %s", ev.Data, want)
	}
}

// A request keeps at most uploadMemory bytes of content in memory; the rest goes to
// temporary files that are unlinked at once, so the directory stays empty while the
// content stays readable, and the same content reads back twice (a retried
// transaction).
func TestUploadSpillsPastTheMemoryBudgetToUnlinkedFiles(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	c := applyConfig(t)
	small := append([]byte("%PDF-1.4\n"), make([]byte, uploadMemory-9)...) // the whole budget
	big := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), 300<<10)...)
	c.Fields[1].MaxFiles = 3
	c.Fields[1].MaxFileSize = 0
	res := mustParse(t, c, postParts(t, textPart("name", "Ada"), filePart("cv", "a.pdf", "application/pdf", small),
		filePart("cv", "b.pdf", "application/pdf", big), filePart("cv", "c.pdf", "application/pdf", small)))
	files := res.Submission.Files
	if _, ok := files[0].Content.(outbox.BytesContent); !ok {
		t.Errorf("first file (the whole budget) not in memory: %T", files[0].Content)
	}
	for i := 1; i < 3; i++ {
		if _, ok := files[i].Content.(tempContent); !ok {
			t.Errorf("file %d not spilled: %T", i, files[i].Content)
		}
	}
	for i, f := range files {
		// The third file came after the budget was spent: its type is still judged on
		// its first bytes, not on the one byte that told it would not fit.
		if f.SniffedType != "application/pdf" || f.Rejected != "" {
			t.Errorf("file %d sniffed %q, rejected %q", i, f.SniffedType, f.Rejected)
		}
	}
	if res.uploads.memory > uploadMemory {
		t.Errorf("%d bytes in memory, budget %d", res.uploads.memory, uploadMemory)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files visible on disk: %v", left)
	}
	for round := 0; round < 2; round++ {
		rc, _ := files[1].Content.Open()
		got, _ := io.ReadAll(rc)
		if !bytes.Equal(got, big) {
			t.Fatalf("round %d: spilled content %d bytes, want %d", round, len(got), len(big))
		}
	}
	res.Close()
	if _, err := files[1].Content.Open(); err == nil {
		rc, _ := files[1].Content.Open()
		if _, err := io.ReadAll(rc); err == nil {
			t.Error("content still readable after Close")
		}
	}
}

func TestSanitizeFileName(t *testing.T) {
	for in, want := range map[string]string{
		"report.pdf":                      "report.pdf",
		"../../etc/passwd":                "passwd",
		`C:\Users\ada\cv.pdf`:             "cv.pdf",
		"..":                              "file",
		"":                                "file",
		".htaccess":                       "htaccess",
		"cv\u202Efdp.exe":                 "cvfdp.exe",
		"a\x00b\x1b[31mc\x7f.pdf":         "ab[31mc.pdf",
		"zero\u200bwidth.pdf":             "zerowidth.pdf",
		`what?<>:"|*.pdf`:                 "what_______.pdf",
		"trailing. . ":                    "trailing",
		"bad\xffutf8.pdf":                 "badutf8.pdf",
		"tab\tname.pdf":                   "tabname.pdf",
		strings.Repeat("é", 100) + ".pdf": strings.Repeat("é", 73) + ".pdf",
	} {
		if got := sanitizeFileName(in); got != want {
			t.Errorf("sanitizeFileName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSniff(t *testing.T) {
	for in, want := range map[string]string{
		"%PDF-1.7":          "application/pdf",
		"\x89PNG\r\n\x1a\n": "image/png",
		"\xff\xd8\xff\xe0":  "image/jpeg",
		"<html><body>":      "text/html",
		"  <!DOCTYPE html>": "text/html",
		`<svg xmlns="http://www.w3.org/2000/svg">`: "image/svg+xml",
		`<?xml version="1.0"?><svg/>`:              "image/svg+xml",
		"#!/bin/sh\nrm -rf /":                      "text/x-shellscript",
		"MZ\x90\x00":                               "application/x-msdownload",
		"\x7fELF\x02\x01":                          "application/x-elf",
		"\xcf\xfa\xed\xfe":                         "application/x-mach-binary",
		"PK\x03\x04":                               "application/zip",
		"plain words":                              "text/plain",
	} {
		if got := sniff([]byte(in)); got != want {
			t.Errorf("sniff(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTypeAllowed(t *testing.T) {
	for _, tc := range []struct {
		types   []string
		sniffed string
		want    bool
	}{
		{nil, "application/pdf", true},
		{nil, "text/html", false},
		{nil, "image/svg+xml", false},
		{[]string{"image/*"}, "image/png", true},
		{[]string{"image/*"}, "image/svg+xml", false},
		{[]string{"image/svg+xml"}, "image/svg+xml", true},
		{[]string{"*/*"}, "application/x-msdownload", false},
		{[]string{"application/pdf"}, "text/plain", false},
	} {
		if got := typeAllowed(tc.types, tc.sniffed); got != tc.want {
			t.Errorf("typeAllowed(%v, %s) = %v, want %v", tc.types, tc.sniffed, got, tc.want)
		}
	}
}

// A file field whose max_size the body bound could never let through is a config error.
func TestProvisionRefusesMaxSizeAboveTheBodyBound(t *testing.T) {
	c := &Config{Form: "apply", Fields: []FieldSpec{{Name: "cv", File: true, MaxFileSize: 5 << 20}}}
	err := c.Provision()
	if err == nil || !strings.Contains(err.Error(), "field cv: max_size 5242880 is above the body bound 262144: raise max_body") {
		t.Fatalf("provision: %v", err)
	}
}

// With files_url, the webhook's files carry a signed link made at intake; a chat message
// lists each file (name, size, type, SHA-256 and the link) after the fields. A rejected
// file is in neither.
func TestWebhookAndChatCarryFileMetadataAndLinks(t *testing.T) {
	c := applyConfig(t)
	c.Routes = append(c.Routes, Route{Channel: outbox.ChannelSlack, URL: "https://hooks.slack.com/services/T/B/X"})
	c.FileURL = func(id uuid.UUID, now time.Time) string {
		return "https://forms.example.com/files/" + id.String() + "?exp=" + fmt.Sprint(now.Unix()+60)
	}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, c, postParts(t, textPart("name", "Ada"), filePart("cv", "cv.pdf", "application/pdf", []byte("%PDF-1.4 hi"))))
	defer res.Close()
	f := res.Submission.Files[0]
	link := "https://forms.example.com/files/" + f.ID.String() + "?exp=" + fmt.Sprint(testNow.Unix()+60)
	for _, d := range res.Deliveries {
		p := payloadOf(t, d)
		switch d.Channel {
		case outbox.ChannelWebhook:
			var body struct{ Files []map[string]any }
			json.Unmarshal(p.Body, &body)
			if len(body.Files) != 1 || body.Files[0]["url"] != link || body.Files[0]["sha256"] != f.SHA256 {
				t.Errorf("webhook files = %v, want the link %s", body.Files, link)
			}
		case outbox.ChannelSlack:
			// The link is ours, after the isolated value (chat.Field.Link): an isolate mark
			// at its end would become part of the URL a chat service links.
			if want := "\u2068cv.pdf (11 B, application/pdf) sha256 " + f.SHA256 + "\u2069 " + link; !strings.Contains(string(p.Body), want) {
				t.Errorf("slack body lacks %q:\n%s", want, p.Body)
			}
		}
	}

	rejected := mustParse(t, c, postParts(t, textPart("name", "Ada"), filePart("cv", "cv.pdf", "application/pdf", []byte("<html>"))))
	defer rejected.Close()
	for _, d := range rejected.Deliveries {
		if p := payloadOf(t, d); strings.Contains(string(p.Body)+p.Text, "cv.pdf") {
			t.Errorf("%s payload of a rejected file names it: %s%s", d.Channel, p.Body, p.Text)
		}
	}
}

// `attach` puts the accepted files on the email when they fit its cap, and only those;
// over the cap the text says why they are not attached.
func TestAttachWithinItsCap(t *testing.T) {
	c := applyConfig(t)
	c.Routes = []Route{{Name: "small", Channel: outbox.ChannelEmail, To: []string{"hr@example.com"}, Attach: true, AttachMax: 20},
		{Name: "big", Channel: outbox.ChannelEmail, To: []string{"boss@example.com"}, Attach: true}}
	c.InboxURL = "https://example.com/inbox"
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, c, postParts(t, textPart("name", "Ada"), filePart("cv", "cv.pdf", "application/pdf", pdf),
		filePart("photos", "x.png", "image/png", []byte("<svg onload=alert(1)>"))))
	defer res.Close()
	byRoute := map[string]outbox.Payload{}
	for _, d := range res.Deliveries {
		byRoute[d.Route] = payloadOf(t, d)
	}
	want := []outbox.AttachmentRef{{FileID: res.Submission.Files[0].ID, Name: "cv.pdf", Type: "application/pdf", Size: int64(len(pdf))}}
	if got := byRoute["big"].Attachments; len(got) != 1 || got[0] != want[0] {
		t.Errorf("big route attachments = %+v, want the cv only (the SVG was rejected)", got)
	}
	small := byRoute["small"]
	if len(small.Attachments) != 0 || !strings.Contains(small.Text, fmt.Sprintf("(The files are not attached: %d bytes in all is over this notification's limit of 20 bytes; open them in the inbox.)", len(pdf))) {
		t.Errorf("small route: %d attachments, text:\n%s", len(small.Attachments), small.Text)
	}
}

func TestAttachIsAnEmailOption(t *testing.T) {
	c := &Config{Form: "f", Routes: []Route{{Channel: outbox.ChannelWebhook, URL: "https://x.example/h", Attach: true}}}
	if err := c.Provision(); err == nil || !strings.Contains(err.Error(), "attach is an e-mail option") {
		t.Fatalf("provision: %v", err)
	}
}

// The operator's e-mail template sees the accepted files (.Files), not a rejected one.
func TestEmailTemplateSeesTheFiles(t *testing.T) {
	c := applyConfig(t)
	c.Routes = []Route{{Channel: outbox.ChannelEmail, To: []string{"hr@example.com"}, BodyText: "testdata/templates/files.txt"}}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, c, postParts(t, textPart("name", "Ada"), filePart("cv", "cv.pdf", "application/pdf", []byte("%PDF-1.4 hi")),
		filePart("photos", "x.png", "image/png", []byte("<html>"))))
	defer res.Close()
	want := "Files of apply:\n- cv: cv.pdf (11 B, application/pdf) " + res.Submission.Files[0].SHA256 + "\n"
	if got := payloadOf(t, res.Deliveries[0]).Text; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}
