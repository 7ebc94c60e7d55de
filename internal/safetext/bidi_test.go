package safetext

import "testing"

func TestStripBidiRemovesEveryEmbeddingOverrideAndIsolate(t *testing.T) {
	for in, want := range map[string]string{
		"Mallory\u202e":                       "Mallory",
		"\u202aa\u202bb\u202cc\u202dd\u202ee": "abcde",
		"\u2066a\u2067b\u2068c\u2069d":        "abcd",
		"plain ascii":                         "plain ascii",
		"שלום \u200f mark stays":              "שלום \u200f mark stays",
		"":                                    "",
	} {
		if got := StripBidi(in); got != want {
			t.Errorf("StripBidi(%q) = %q, want %q", in, got, want)
		}
	}
}

// Isolate brackets a value in FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE with the
// value's own controls removed first, so a PDI inside cannot close the isolate early.
func TestIsolateBracketsTheValueWithoutItsControls(t *testing.T) {
	for in, want := range map[string]string{
		"Mallory\u202e":  "\u2068Mallory\u2069",
		"a\u2069\u202eb": "\u2068ab\u2069",
		"שלום":           "\u2068שלום\u2069",
		"":               "",
		"\u202e":         "",
	} {
		if got := Isolate(in); got != want {
			t.Errorf("Isolate(%q) = %q, want %q", in, got, want)
		}
	}
}

// ShowInvisible writes the characters a reader cannot see or that reorder what they see
// as a marked escape, so the inbox shows what was sent.
func TestShowInvisibleMarksZeroWidthAndBidiControls(t *testing.T) {
	for in, want := range map[string]string{
		"Ad\u200ba":                "Ad⟨U+200B⟩a",
		"\u200c\u200d\u2060\ufeff": "⟨U+200C⟩⟨U+200D⟩⟨U+2060⟩⟨U+FEFF⟩",
		"Mallory\u202e and co":     "Mallory⟨U+202E⟩ and co",
		"\u2066x\u2069":            "⟨U+2066⟩x⟨U+2069⟩",
		"Zoë Ünal שלום":            "Zoë Ünal שלום",
	} {
		if got := ShowInvisible(in); got != want {
			t.Errorf("ShowInvisible(%q) = %q, want %q", in, got, want)
		}
	}
}
