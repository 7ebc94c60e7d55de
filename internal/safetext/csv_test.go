package safetext

import "testing"

func TestCSVCellQuotesFormulaStarts(t *testing.T) {
	for in, want := range map[string]string{
		`=HYPERLINK("http://evil.example","x")`: `'=HYPERLINK("http://evil.example","x")`,
		"+1+1":                                  "'+1+1",
		"-2+3":                                  "'-2+3",
		"@SUM(A1:A2)":                           "'@SUM(A1:A2)",
		"\t=1":                                  "'\t=1",
		"\r=1":                                  "'\r=1",
		"'quoted":                               "''quoted",
		"":                                      "",
		"Ada":                                   "Ada",
		" =1":                                   " =1",
		"a=1":                                   "a=1",
		`{"name":"=1"}`:                         `{"name":"=1"}`,
		"https://example.com/":                  "https://example.com/",
	} {
		if got := CSVCell(in); got != want {
			t.Errorf("CSVCell(%q) = %q, want %q", in, got, want)
		}
	}
}

// Removing one leading quote from a cell that has one gives back the stored value, so
// an export can be read back exactly.
func TestCSVCellIsReversible(t *testing.T) {
	for _, in := range []string{"=1", "'=1", "''", "'", "plain", "-", ""} {
		out := CSVCell(in)
		back := out
		if len(back) > 0 && back[0] == '\'' {
			back = back[1:]
		}
		if back != in {
			t.Errorf("CSVCell(%q) = %q reads back as %q", in, out, back)
		}
	}
}

func TestCSVRecordNeutralisesEveryCell(t *testing.T) {
	got := CSVRecord([]string{"id", "=a", "b", "@c"})
	want := []string{"id", "'=a", "b", "'@c"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cell %d = %q, want %q", i, got[i], want[i])
		}
	}
}
