package safetext

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestTerminalEscapesControls(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b]0;pwned\x07":   `\u001b]0;pwned\u0007`,
		"\x1b[2J\x1b[H":      `\u001b[2J\u001b[H`,
		"bad\rgood":          `bad\u000dgood`,
		"bs\b\x00\x7f":       `bs\u0008\u0000\u007f`,
		"\u009b31m\u009d0;x": `\u009b31m\u009d0;x`,
		"\u0080\u009f\u00a0": "\\u0080\\u009f\u00a0",
		"line\nnext\tcol":    "line\nnext\tcol",
		"Grüße, 日本, 🙂":       "Grüße, 日本, 🙂",
		"bad \xff\x9b utf-8": `bad \xff\x9b utf-8`,
		"cut \xe6\x97":       `cut \xe6\x97`,
		"":                   "",
	} {
		if got := Terminal(in); got != want {
			t.Errorf("Terminal(%q) = %q, want %q", in, got, want)
		}
	}
}

// JSON that passes through the escaping stays JSON with the same strings: encoding/json
// leaves DEL and the C1 controls raw, and their escapes are JSON's own.
func TestTerminalKeepsJSONMeaning(t *testing.T) {
	value := "a\u007fb\u009b31mc\u0085d\x1b]0;t\x07"
	raw, err := json.Marshal(map[string]string{"v": value})
	if err != nil {
		t.Fatal(err)
	}
	shown := Terminal(string(raw))
	if bytes.ContainsAny([]byte(shown), "\x1b\x07\x7f") || bytes.Contains([]byte(shown), []byte("\u009b")) {
		t.Fatalf("escaped JSON still holds controls: %q", shown)
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(shown), &back); err != nil {
		t.Fatalf("escaped JSON %q does not parse: %v", shown, err)
	}
	if back["v"] != value {
		t.Errorf("escaped JSON decodes to %q, want %q", back["v"], value)
	}
}

// A Writer fed one byte at a time (a split anywhere, also inside a character) writes
// what Terminal makes of the whole text.
func TestWriterEscapesAcrossSplitWrites(t *testing.T) {
	in := "ok 日本 \u009b31m \x1b]0;x\x07 🙂 \xff end \xe6\x97"
	var out bytes.Buffer
	w := NewWriter(&out)
	for i := 0; i < len(in); i++ {
		n, err := w.Write([]byte{in[i]})
		if err != nil || n != 1 {
			t.Fatalf("write byte %d: n %d, err %v", i, n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := Terminal(in); out.String() != want {
		t.Errorf("Writer wrote %q, want %q", out.String(), want)
	}
}

func TestWriterPassesPlainTextUnchanged(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	in := "id\tform\n1\tcontact, Grüße\n"
	if _, err := w.Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if out.String() != in {
		t.Errorf("Writer wrote %q, want %q", out.String(), in)
	}
}
