package outbox_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

// An email's attachments are read from the store at send time, by file id; a file erased
// since is left out; without a store the send is temporary.
func TestRouterAttachesStoredFiles(t *testing.T) {
	st := storetest.OpenSQLite(t)
	sub := storetest.NewSubmission("apply")
	pdf := bytes.Repeat([]byte("%PDF "), 70000) // several chunks
	sub.Files = []outbox.File{storetest.NewFile(sub, "cv", "cv.pdf", pdf)}
	storetest.MustAccept(t, st, sub)
	email := fake.New("mail")
	r := outbox.Router{Email: email, Files: func() outbox.FileStore { return st }}
	d := delivery(outbox.ChannelEmail, "hr@example.com", outbox.Payload{Subject: "Hi", Text: "t", Attachments: []outbox.AttachmentRef{
		{FileID: sub.Files[0].ID, Name: "cv.pdf", Type: "application/pdf", Size: int64(len(pdf))},
		{FileID: uuid.Must(uuid.NewV7()), Name: "gone.png", Type: "image/png", Size: 3},
	}})
	if _, err := r.Send(context.Background(), d); err != nil {
		t.Fatalf("send: %v", err)
	}
	ms := email.Messages()
	if len(ms) != 1 || len(ms[0].Attachments) != 1 {
		t.Fatalf("provider got %+v", ms)
	}
	if a := ms[0].Attachments[0]; a.Name != "cv.pdf" || a.ContentType != "application/pdf" || !bytes.Equal(a.Content, pdf) {
		t.Errorf("attachment %s %s, %d bytes", a.Name, a.ContentType, len(a.Content))
	}

	noStore := outbox.Router{Email: email, Files: func() outbox.FileStore { return nil }}
	_, err := noStore.Send(context.Background(), d)
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Class != providers.Temporary {
		t.Fatalf("send without a store: %v, want temporary", err)
	}
}
