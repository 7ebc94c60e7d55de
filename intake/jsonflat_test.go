package intake

import (
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var flatSeeds = []string{
	`{"message":"hello"}`,
	` {"name" : "Ada", "n": -12.5e+3, "ok": true, "no": false, "x": null, "z":0} `,
	`{"esc":"a\"b\\c\/d\b\f\n\r\t","":""}`,
	`{"u":"caf\u00e9","s":"\ud83c\udf89","lone":"\ud800"}`,
	`{"dup":"1","dup":"2"}`,
	`{}`, ` { } `, `{"a":{"b":1}}`, `{"a":[1]}`, `[]`, `"x"`, ``, `{`, `{"a"`, `{"a":}`,
	`{"a":1,}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":tru}`, `{"a":"\x"}`,
	"{\"a\":\"tab\there\"}", `{"a":1}{"b":2}`, `{"a":1} x`, `{"a" "b"}`, `{a:1}`,
	`{"日本":"語 🎉"}`, `{"big":123456789012345678901234567890}`,
}

// The fast path must give what the decoder path gives, and it must actually take the
// common shapes (or intake would pay for both).
func TestFlatJSON(t *testing.T) {
	c := &Config{MaxFields: 50}
	for _, body := range []string{flatSeeds[0], flatSeeds[1], flatSeeds[2], flatSeeds[4], flatSeeds[5], `{"日本":"語 🎉"}`} {
		got, ok := flatJSON([]byte(body), c.MaxFields)
		if !ok {
			t.Errorf("fast path declined %s", body)
			continue
		}
		want, err := c.decodeJSON([]byte(body))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: fast %q, decoder %q (%v)", body, got, want, err)
		}
	}
	if got, _ := flatJSON([]byte(flatSeeds[2]), 50); got[0].Value != "a\"b\\c/d\b\f\n\r\t" {
		t.Errorf("escapes decoded as %q", got[0].Value)
	}
	if got, _ := flatJSON([]byte(flatSeeds[1]), 50); !reflect.DeepEqual(got, outbox.Fields{
		{Name: "name", Value: "Ada"}, {Name: "n", Value: "-12.5e+3"}, {Name: "ok", Value: "true"},
		{Name: "no", Value: "false"}, {Name: "x", Value: ""}, {Name: "z", Value: "0"}}) {
		t.Errorf("scalars read as %q", got)
	}
	// Over the field limit the decoder path answers (with its error).
	if _, ok := flatJSON([]byte(`{"a":"1","b":"2"}`), 1); ok {
		t.Error("fast path took more fields than allowed")
	}
}

func FuzzFlatJSONMatchesDecoder(f *testing.F) {
	for _, s := range flatSeeds {
		f.Add([]byte(s), uint8(50))
	}
	f.Fuzz(func(t *testing.T, raw []byte, max uint8) {
		if !utf8.Valid(raw) { // readJSON refuses these before either path
			return
		}
		c := &Config{MaxFields: int(max % 70)}
		fast, ok := flatJSON(raw, c.MaxFields)
		slow, err := c.decodeJSON(raw)
		if !ok {
			return // the decoder path answers; nothing to compare
		}
		if err != nil {
			t.Fatalf("%q: fast path accepted %q, decoder refused: %v", raw, fast, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %q, decoder %q", raw, fast, slow)
		}
	})
}
