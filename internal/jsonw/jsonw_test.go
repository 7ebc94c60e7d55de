package jsonw

import (
	"encoding/json"
	"strings"
	"testing"
)

var stringCases = []string{
	"", "plain", `quote " and backslash \`, "tab\tnewline\ncr\rbs\bff\f",
	"\x00\x01\x1f\x7f", "<script>alert('x')</script> & co", "naïve café 日本語 🎉",
	"line\u2028para\u2029end", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate half",
	"é at the end: é", "\xf0\x9f\x8e", "mixed <a href=\"x\">\u2028\xfe</a>",
}

func marshalString(t testing.TB, s string) string {
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(want)
}

func TestStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range stringCases {
		if got, want := string(String(nil, s)), marshalString(t, s); got != want {
			t.Errorf("String(%q) = %s, encoding/json writes %s", s, got, want)
		}
	}
	// Appends to what is there.
	if got := string(String([]byte("x:"), "y")); got != `x:"y"` {
		t.Errorf("append: %s", got)
	}
}

func FuzzStringMatchesEncodingJSON(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(String(nil, s)), marshalString(t, s); got != want {
			t.Fatalf("String(%q) = %s, encoding/json writes %s", s, got, want)
		}
	})
}

func TestObjectMatchesEncodingJSON(t *testing.T) {
	type shape struct {
		A string          `json:"a"`
		B string          `json:"b,omitempty"`
		C bool            `json:"c"`
		D json.RawMessage `json:"d"`
		E string          `json:"e<&>"`
	}
	for _, v := range []shape{
		{A: "x<y", B: "", C: true, D: json.RawMessage(`{"k":[1,2]}`), E: "\u2028"},
		{A: "", B: "b", C: false, D: json.RawMessage(`"s"`)},
	} {
		o := NewObject(nil)
		o.String("a", v.A)
		o.StringOmitEmpty("b", v.B)
		o.Bool("c", v.C)
		o.Raw("d", v.D)
		o.String("e<&>", v.E)
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(o.Close()); got != string(want) {
			t.Errorf("object = %s, encoding/json writes %s", got, want)
		}
	}
	empty := NewObject([]byte("["))
	if got := string(empty.Close()); got != "[{}" {
		t.Errorf("empty object = %s, want [{}", got)
	}
}

// checkVerbatim holds Verbatim to its two promises on v and its substring v[i:j]: it
// reports exactly whether String copies the substring, and a verbatim substring of v is
// in v's JSON text too.
func checkVerbatim(t *testing.T, v string, i, j int) {
	sub := v[i:j]
	if got, want := Verbatim(sub), string(String(nil, sub)) == `"`+sub+`"`; got != want {
		t.Fatalf("Verbatim(%q) = %v, but String writes %s", sub, got, String(nil, sub))
	}
	if Verbatim(sub) && !strings.Contains(string(String(nil, v)), sub) {
		t.Fatalf("Verbatim(%q), but String(%q) = %s lacks it", sub, v, String(nil, v))
	}
}

func TestVerbatim(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"zanzibar", true}, {"100% done_ok", true}, {"naïve café 日本語", true}, {"", true},
		{"<img", false}, {`say "hi"`, false}, {"a&b", false}, {`back\slash`, false},
		{"tab\t", false}, {"para\u2029", false}, {"\ufffd", false}, {"bad \xff", false},
	} {
		if got := Verbatim(c.s); got != c.want {
			t.Errorf("Verbatim(%q) = %v, want %v", c.s, got, c.want)
		}
	}
	for _, v := range stringCases {
		for i := 0; i <= len(v); i++ {
			for j := i; j <= len(v); j++ {
				checkVerbatim(t, v, i, j)
			}
		}
	}
}

func FuzzVerbatim(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s, 0, len(s)/2)
	}
	f.Fuzz(func(t *testing.T, v string, i, j int) {
		if i < 0 || j < i || j > len(v) {
			return
		}
		checkVerbatim(t, v, i, j)
	})
}
