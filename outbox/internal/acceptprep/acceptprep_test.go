package acceptprep

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func TestPrepare(t *testing.T) {
	if _, err := Prepare(nil); err == nil {
		t.Error("nil submission: no error")
	}
	if _, err := Prepare(&outbox.Submission{Form: "contact"}); err == nil {
		t.Error("submission without an id: no error")
	}

	before := time.Now()
	sub := &outbox.Submission{ID: uuid.Must(uuid.NewV7()), Form: "contact", Status: outbox.SubmissionAccepted}
	p, err := Prepare(sub)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Data) != "{}" || p.Created.Before(before) || p.Created.After(time.Now()) {
		t.Errorf("unset data and time: data %s created %v, want {} and the present", p.Data, p.Created)
	}
	if string(p.Event) != `{"form":"contact","status":"accepted"}` {
		t.Errorf("event = %s", p.Event)
	}

	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	sub.CreatedAt, sub.Data = at, outbox.Fields{{Name: "name", Value: "Ada"}}
	if p, err = Prepare(sub); err != nil {
		t.Fatal(err)
	}
	if !p.Created.Equal(at) || string(p.Data) == "{}" {
		t.Errorf("set data and time: data %s created %v, want the fields and %v", p.Data, p.Created, at)
	}
}
