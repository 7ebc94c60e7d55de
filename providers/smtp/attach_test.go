package smtp_test

import (
	"bytes"
	"context"
	"net/mail"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/mimemsg"
	"github.com/formoutbox/caddy-form-outbox/providers/smtpfake"
)

// Attachments arrive in the DATA as a multipart/mixed message, byte for byte, even a file
// holding lines that start with a dot (dot-stuffing is SMTP's to undo).
func TestSendsAttachments(t *testing.T) {
	srv := newFake(t, smtpfake.Config{})
	m := message("0190a5b0-0000-7000-8000-0000000000a1")
	pdf := bytes.Repeat([]byte("%PDF\r\n.\r\n..\x00\xff"), 500)
	m.Attachments = []providers.Attachment{{Name: "brief.pdf", ContentType: "application/pdf", Content: pdf}}
	if _, err := newProvider(t, srv, nil).Send(context.Background(), m); err != nil {
		t.Fatalf("send: %v", err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(only(t, srv).Data))
	if err != nil {
		t.Fatal(err)
	}
	_, _, files, err := mimemsg.ReadMixed(msg)
	if err != nil || len(files) != 1 || files[0].Name != "brief.pdf" || !bytes.Equal(files[0].Content, pdf) {
		t.Fatalf("received %d files (%v)", len(files), err)
	}
}
