package chat

import (
	"strings"
	"testing"
)

var testFormat = Format{Escape: func(s string) string { return strings.ReplaceAll(s, "<", "&lt;") },
	Length: UTF16Len, Limit: 40, Note: "[cut]"}

// Every value is isolated with its own bidi controls removed, whole or cut: a cut value
// still closes its isolate, so the note after it reads in the operator's direction.
func TestFitIsolatesEveryValueEvenWhenCut(t *testing.T) {
	text, cut := testFormat.Fit("head\n", []Part{{Markup: "name: ", Text: "Mallory\u202e"}, {Markup: "\nmsg: ", Text: ""}}, "\nopen")
	if want := "head\nname: \u2068Mallory\u2069\nmsg: \nopen"; cut || text != want {
		t.Fatalf("whole: %q (cut %v), want %q", text, cut, want)
	}
	text, cut = testFormat.Fit("head\n", []Part{{Markup: "name: ", Text: "\u202e<" + strings.Repeat("x", 60)}}, "\nopen")
	want := "head\nname: \u2068&lt;" + strings.Repeat("x", 13) + "\u2069[cut]\nopen"
	if !cut || text != want || UTF16Len(text) > testFormat.Limit {
		t.Fatalf("cut: %q (cut %v, %d long), want %q", text, cut, UTF16Len(text), want)
	}
}

func TestFitMarkupIsolatesEveryValueEvenWhenCut(t *testing.T) {
	parts := []Part{{Markup: "<b>", Text: "Eve\u2069\u202e"}, {Markup: "</b>", Text: "\u202e"}, {Markup: " <pre>", Text: strings.Repeat("y", 60)}, {Markup: "</pre>"}}
	text, cut, err := testFormat.FitMarkup(parts)
	want := "<b>\u2068Eve\u2069</b> <pre>\u2068" + strings.Repeat("y", 9) + "\u2069</pre>[cut]"
	if err != nil || !cut || text != want || UTF16Len(text) > testFormat.Limit {
		t.Fatalf("%q (cut %v, %d long, %v), want %q", text, cut, UTF16Len(text), err, want)
	}
}
