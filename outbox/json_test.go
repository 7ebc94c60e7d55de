package outbox

import (
	"encoding/json"
	"strings"
	"testing"
)

// The hand-written encoders must write what encoding/json writes (stored rows and sent
// bodies do not change with the encoder), including its escaping of HTML and of invalid
// UTF-8.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	hostile := "<b>\"Ada\" & co</b>\n\u2028\xff"

	fields := Fields{{Name: "name", Value: hostile}, {Name: "e<mail>", Value: "a@b.example"}, {Name: "empty", Value: ""}}
	var want strings.Builder
	want.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			want.WriteByte(',')
		}
		k, _ := json.Marshal(f.Name)
		v, _ := json.Marshal(f.Value)
		want.Write(k)
		want.WriteByte(':')
		want.Write(v)
	}
	want.WriteByte('}')
	if got := string(fields.AppendJSON(nil)); got != want.String() {
		t.Errorf("Fields.AppendJSON = %s, want %s", got, want.String())
	}
	if got, _ := json.Marshal(fields); string(got) != want.String() {
		t.Errorf("json.Marshal(Fields) = %s, want %s", got, want.String())
	}
	if got := string(Fields{}.AppendJSON(nil)); got != "{}" {
		t.Errorf("no fields = %s, want {}", got)
	}
	var back Fields
	if err := json.Unmarshal(fields.AppendJSON(nil), &back); err != nil || len(back) != 3 || back[1].Name != "e<mail>" {
		t.Errorf("round trip: %v %v", back, err)
	}

	for _, m := range []Meta{{}, {Origin: "https://x.example", ClientIP: hostile}, {Referer: "r", UserAgent: "ua<1>"}} {
		want, _ := json.Marshal(m) // Meta has no MarshalJSON: this is the reflective encoder
		if got := string(m.AppendJSON(nil)); got != string(want) {
			t.Errorf("Meta.AppendJSON = %s, want %s", got, want)
		}
	}

	body := json.RawMessage(fields.AppendJSON(nil))
	for _, p := range []Payload{
		{},
		{To: "a@b.example", ReplyTo: hostile, Subject: "Hi <there>", Text: "t\n", HTML: "<p>x</p>"},
		{URL: "https://hook.example/a?b=1&c=2", Body: body},
		{From: "Example Ltd <hello@example.com>", To: "a@b.example", Subject: "We got it", Text: "t\n",
			Autoreply: &AutoreplyGate{Form: hostile, Key: AutoreplyKey("A@b.example"), WindowSeconds: 86400}},
	} {
		want, err := json.Marshal(p) // Payload has no MarshalJSON either
		if err != nil {
			t.Fatal(err)
		}
		if got := string(p.AppendJSON(nil)); got != string(want) {
			t.Errorf("Payload.AppendJSON = %s, want %s", got, want)
		}
	}
}
