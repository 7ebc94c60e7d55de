package inbox

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// acceptWithFiles stores a submission of form with an HTML file (kept, as a rejected
// upload is) and a metadata-only one.
func (f *fixture) acceptWithFiles(form string) (*outbox.Submission, []outbox.File) {
	f.t.Helper()
	sub := storetest.NewSubmission(form, storetest.WithCreatedAt(now.Add(-time.Hour)))
	html := storetest.NewFile(sub, "cv", `"evil"; name=x.html`, []byte("<!DOCTYPE html><script>alert(1)</script>"))
	html.SniffedType, html.Rejected = "text/html", outbox.FileTypeNotAllowed
	meta := storetest.NewFile(sub, "photos", "p.png", []byte("\x89PNG"))
	meta.HasContent, meta.Content = false, nil
	sub.Files = []outbox.File{html, meta}
	storetest.MustAccept(f.t, f.store, sub)
	return sub, sub.Files
}

// A download is never rendered by the browser: an attachment of type
// application/octet-stream with nosniff and a sandboxing CSP, whatever the content is,
// byte for byte, under a name that cannot break out of its header parameter.
func TestDownloadIsAnAttachmentNeverInline(t *testing.T) {
	f := newFixture(t)
	_, files := f.acceptWithFiles("contact")
	for _, method := range []string{"GET", "HEAD"} {
		w := f.do(method, "/inbox/files/"+files[0].ID.String(), nil, nil)
		h := w.Header()
		if w.Code != 200 || h.Get("Content-Type") != "application/octet-stream" ||
			h.Get("Content-Disposition") != `attachment; filename="\"evil\"; name=x.html"` ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != downloadCSP ||
			h.Get("Content-Length") != "40" {
			t.Fatalf("%s: %d %v", method, w.Code, h)
		}
		want := map[string]string{"GET": "<!DOCTYPE html><script>alert(1)</script>", "HEAD": ""}[method]
		if w.Body.String() != want {
			t.Errorf("%s body = %q, want %q", method, w.Body, want)
		}
	}
	// Metadata only (spam), unknown and malformed ids: 404.
	for _, id := range []string{files[1].ID.String(), "0190b5a1-0000-7000-8000-000000000000", "nope"} {
		if w := f.do("GET", "/inbox/files/"+id, nil, nil); w.Code != http.StatusNotFound || w.Header().Get("Content-Disposition") != "" {
			t.Errorf("file %s: %d %v", id, w.Code, w.Header())
		}
	}
}

// An inbox limited to some forms does not serve the files of the others.
func TestDownloadOfAHiddenFormIsNotFound(t *testing.T) {
	f := newFixture(t, "quote")
	_, files := f.acceptWithFiles("contact")
	if w := f.do("GET", "/inbox/files/"+files[0].ID.String(), nil, nil); w.Code != http.StatusNotFound {
		t.Fatalf("file of a hidden form: %d", w.Code)
	}
}

// The submission page lists the files: a download link where the content was kept,
// the rule a rejected one broke, sizes, types and the SHA-256; names are escaped.
func TestSubmissionPageListsFiles(t *testing.T) {
	f := newFixture(t)
	sub, files := f.acceptWithFiles("contact")
	w := f.do("GET", "/inbox/submissions/"+sub.ID.String(), nil, nil)
	body := w.Body.String()
	for _, want := range []string{
		`<a href="/inbox/files/` + files[0].ID.String() + `" download><bdi>&#34;evil&#34;; name=x.html</bdi></a>`,
		`<span class="badge quarantined" data-rejected>type_not_allowed</span>`,
		`40 B · text/html (declared application/pdf)`,
		files[0].SHA256,
		`p.png</bdi> <small>(content not kept)</small>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "/inbox/files/"+files[1].ID.String()) {
		t.Error("a metadata-only file has a download link")
	}
}

// Exports carry each submission's file metadata, never the content.
func TestExportIncludesFileMetadata(t *testing.T) {
	f := newFixture(t)
	_, files := f.acceptWithFiles("contact")
	w := f.do("POST", "/inbox/export", post("format", "csv"), nil)
	rows, err := csv.NewReader(strings.NewReader(w.Body.String())).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("csv: %v %q", err, w.Body)
	}
	cell := rows[1][len(ExportColumns)-1]
	var got []map[string]any
	if err := json.Unmarshal([]byte(cell), &got); err != nil || len(got) != 2 {
		t.Fatalf("files cell %q: %v", cell, err)
	}
	if got[0]["id"] != files[0].ID.String() || got[0]["rejected"] != "type_not_allowed" || got[0]["size"] != float64(40) ||
		got[0]["sha256"] != files[0].SHA256 || got[0]["kept"] != true || got[1]["kept"] != false {
		t.Errorf("files cell = %v", got)
	}
	if strings.Contains(w.Body.String(), "alert(1)") {
		t.Error("the export carries file content")
	}
	w = f.do("POST", "/inbox/export", post("format", "ndjson"), nil)
	var line struct{ Files []map[string]any }
	if err := json.Unmarshal([]byte(strings.SplitN(w.Body.String(), "\n", 2)[0]), &line); err != nil || len(line.Files) != 2 {
		t.Fatalf("ndjson files: %v %s", err, w.Body)
	}
}
