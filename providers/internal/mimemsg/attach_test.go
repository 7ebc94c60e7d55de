package mimemsg_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/mimemsg"
)

// With attachments the message is multipart/mixed: the alternative text and HTML, then
// each file base64-encoded under its name, lines within 78 characters, names that are
// not ASCII encoded as RFC 2231 parameters.
func TestBuildAttachesFiles(t *testing.T) {
	pdf := bytes.Repeat([]byte("%PDF-1.7 \x00\xff"), 1000)
	files := []providers.Attachment{
		{Name: "brief.pdf", ContentType: "application/pdf", Content: pdf},
		{Name: "Zoë \"quote\".png", ContentType: "image/png", Content: []byte("\x89PNG")},
		{Name: "x", ContentType: "not a type", Content: []byte("?")},
	}
	raw, msg := build(t, providers.Message{Text: "files below", HTML: "<p>files</p>", Attachments: files})
	text, html, got, err := mimemsg.ReadMixed(msg)
	if err != nil {
		t.Fatalf("read: %v\n%s", err, raw)
	}
	if text != "files below" || html != "<p>files</p>" {
		t.Errorf("bodies %q %q", text, html)
	}
	files[2].ContentType = "application/octet-stream"
	if !reflect.DeepEqual(got, files) {
		t.Errorf("attachments differ:\n got %+v\nwant %+v", got, files)
	}
	for i, line := range strings.Split(string(raw), "\r\n") {
		if len(line) > 78 {
			t.Fatalf("line %d is %d characters: %q", i, len(line), line)
		}
	}
	if !strings.Contains(string(raw), `filename*=utf-8''Zo%C3%AB%20%22quote%22.png`) {
		t.Errorf("the non-ASCII name is not an RFC 2231 parameter:\n%s", raw)
	}
}
