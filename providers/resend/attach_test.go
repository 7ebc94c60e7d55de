package resend_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/resendfake"
)

// Attachments go as Resend's attachments: name, type and the exact bytes.
func TestSendsAttachments(t *testing.T) {
	fake := resendfake.New()
	defer fake.Close()
	fake.RequireAPIKey(apiKey)
	m := message()
	pdf := bytes.Repeat([]byte("%PDF \x00\xff"), 100)
	m.Attachments = []providers.Attachment{{Name: "brief.pdf", ContentType: "application/pdf", Content: pdf}}
	if _, err := newResend(t, fake, 0).Send(context.Background(), m); err != nil {
		t.Fatalf("send: %v", err)
	}
	emails := fake.Emails()
	if len(emails) != 1 || len(emails[0].Email.Attachments) != 1 {
		t.Fatalf("fake got %+v", emails)
	}
	a := emails[0].Email.Attachments[0]
	if a.Filename != "brief.pdf" || a.ContentType != "application/pdf" || !bytes.Equal(a.Bytes(), pdf) {
		t.Errorf("attachment %s %s, %d bytes", a.Filename, a.ContentType, len(a.Bytes()))
	}
}
