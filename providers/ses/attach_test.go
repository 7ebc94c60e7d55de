package ses_test

import (
	"bytes"
	"context"
	"net/mail"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/mimemsg"
	"github.com/formoutbox/caddy-form-outbox/providers/ses"
	"github.com/formoutbox/caddy-form-outbox/providers/sesfake"
)

// An email with attachments goes as raw MIME (Simple content has none): the same From,
// To and Reply-To in its headers, the bodies and the files in its parts, the tag and the
// configuration set as for any email.
func TestSendsAttachmentsAsRawMIME(t *testing.T) {
	fake := sesfake.New()
	defer fake.Close()
	m := message()
	pdf := bytes.Repeat([]byte("%PDF \x00\xff"), 100)
	m.Attachments = []providers.Attachment{{Name: "brief.pdf", ContentType: "application/pdf", Content: pdf}}
	if _, err := newSES(t, fake, 0).Send(context.Background(), m); err != nil {
		t.Fatalf("send: %v", err)
	}
	sent := fake.Sent()
	if len(sent) != 1 {
		t.Fatalf("fake got %d emails", len(sent))
	}
	e := sent[0].Email
	if e.Content.Simple.Body.Text.Data != "" || len(e.Content.Raw.Data) == 0 {
		t.Fatalf("content: simple %+v, raw %d bytes; want raw only", e.Content.Simple, len(e.Content.Raw.Data))
	}
	msg, err := mail.ReadMessage(bytes.NewReader(e.Content.Raw.Data))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get("From") != `"Forms" <forms@example.com>` && msg.Header.Get("From") != "Forms <forms@example.com>" {
		t.Errorf("From = %q", msg.Header.Get("From"))
	}
	if msg.Header.Get("Reply-To") != "<visitor@example.org>" && msg.Header.Get("Reply-To") != "visitor@example.org" {
		t.Errorf("Reply-To = %q", msg.Header.Get("Reply-To"))
	}
	text, html, files, err := mimemsg.ReadMixed(msg)
	if err != nil || strings.ReplaceAll(text, "\r\n", "\n") != m.Text || html != m.HTML || len(files) != 1 || !bytes.Equal(files[0].Content, pdf) || files[0].Name != "brief.pdf" {
		t.Fatalf("raw message: %q %q %d files, %v", text, html, len(files), err)
	}
	if e.ConfigurationSetName != "forms" || e.Tag(ses.DefaultTagName) != m.ID || len(e.Destination.ToAddresses) != 1 {
		t.Errorf("configuration set %q, tags %+v, to %v", e.ConfigurationSetName, e.EmailTags, e.Destination.ToAddresses)
	}
}
