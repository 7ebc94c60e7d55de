package outbox

import (
	"encoding/json"
	"testing"
)

func TestRestatePayloadChangesOnlyTheSubmissionsStatus(t *testing.T) {
	body := `{"id":"x","form":"contact","status":"spam","created_at":"2026-01-02T03:04:05Z","data":{"status":"spam","note":"\u003cb\u003e \"status\":\"spam\""}}`
	p := (&Payload{URL: "https://hooks.example.com/in?a=1&b=<2>", Body: json.RawMessage(body)}).AppendJSON(nil)
	got, changed, err := RestatePayload(p, SubmissionAccepted)
	if err != nil || !changed {
		t.Fatalf("restate: changed %v, %v", changed, err)
	}
	want := (&Payload{URL: "https://hooks.example.com/in?a=1&b=<2>",
		Body: json.RawMessage(`{"id":"x","form":"contact","status":"accepted","created_at":"2026-01-02T03:04:05Z","data":{"status":"spam","note":"\u003cb\u003e \"status\":\"spam\""}}`)}).AppendJSON(nil)
	if string(got) != string(want) {
		t.Fatalf("restated\n%s\nwant\n%s", got, want)
	}
	if again, changed, err := RestatePayload(got, SubmissionAccepted); err != nil || changed || string(again) != string(got) {
		t.Fatalf("restating again: changed %v, %v", changed, err)
	}
	// A chat body (no status member) and an e-mail (no body) are left as they are.
	for _, p := range []*Payload{{URL: "https://chat.example.com", Body: json.RawMessage(`{"text":"hi","blocks":[{"status":"spam"}]}`)},
		{To: "a@example.com", Subject: "s", Text: "t"}} {
		raw := p.AppendJSON(nil)
		if out, changed, err := RestatePayload(raw, SubmissionAccepted); err != nil || changed || string(out) != string(raw) {
			t.Errorf("%s: changed %v (%v): %s", raw, changed, err, out)
		}
	}
	if _, _, err := RestatePayload([]byte(`{"body":[1]}`), SubmissionAccepted); err == nil {
		t.Error("a body that is not an object: no error")
	}
}
