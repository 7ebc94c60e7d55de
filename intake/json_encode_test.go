package intake

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The answer and the webhook body are written without reflection; they must be what
// encoding/json writes for the documented shapes, escaping included.
func TestHandWrittenJSONMatchesEncodingJSON(t *testing.T) {
	hostile := "<script>\"x\" & \u2028\xff</script>"
	for _, a := range []answer{
		{OK: true, ID: "0192", Status: "accepted"},
		{OK: true, ID: "0192", Status: "accepted", Duplicate: true},
		{OK: false, ID: "0192", Status: "quarantined", Errors: []Violation{{Field: "email", Message: hostile}, {Field: "n<a>me", Message: "required"}}},
		{OK: false, Error: hostile},
		{},
	} {
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(a.appendJSON(nil)); got != string(want) {
			t.Errorf("answer = %s, encoding/json writes %s", got, want)
		}
	}

	type webhookJSON struct { // the documented body
		ID        string        `json:"id"`
		Form      string        `json:"form"`
		Status    string        `json:"status"`
		CreatedAt string        `json:"created_at"`
		Data      outbox.Fields `json:"data"`
	}
	at := time.Date(2026, 11, 29, 21, 0, 0, 123456000, time.FixedZone("x", 3600))
	for _, sub := range []*outbox.Submission{
		{ID: uuid.Must(uuid.NewV7()), Form: "contact", Status: outbox.SubmissionAccepted, CreatedAt: at,
			Data: outbox.Fields{{Name: "message", Value: hostile}, {Name: "a&b", Value: ""}}},
		{ID: uuid.Must(uuid.NewV7()), Form: "f<1>", Status: outbox.SubmissionSpam, CreatedAt: at.Truncate(time.Second)},
	} {
		data := sub.Data
		if data == nil {
			data = outbox.Fields{}
		}
		want, err := json.Marshal(webhookJSON{ID: sub.ID.String(), Form: sub.Form, Status: string(sub.Status),
			CreatedAt: sub.CreatedAt.UTC().Format(time.RFC3339Nano), Data: data})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(webhookBody(sub, nil)); got != string(want) {
			t.Errorf("webhook body = %s, encoding/json writes %s", got, want)
		}
	}
}
