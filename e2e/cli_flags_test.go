package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// runCaddy runs the built binary with args and no server: these commands must answer
// from their flags alone.
func runCaddy(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(caddyBin, args...).CombinedOutput()
	return string(out), err
}

// Each verb of `caddy form-outbox` takes only its own flags: a flag meant for another
// verb is refused by name instead of being ignored, so `list --format csv` cannot
// silently print a table.
func TestCLIVerbsRefuseOtherVerbsFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"list", "--format", "csv"},
		{"status", "--form", "contact"},
		{"retry", "--deliveries", "00000000-0000-0000-0000-000000000000"},
		{"export", "--json"},
		{"show", "--spool", "/tmp", "00000000-0000-0000-0000-000000000000"},
	} {
		out, err := runCaddy(t, append([]string{"form-outbox"}, args...)...)
		if err == nil {
			t.Errorf("form-outbox %v was accepted:\n%s", args, out)
			continue
		}
		if !strings.Contains(out, "unknown flag: "+args[1]) {
			t.Errorf("form-outbox %v: error does not name the flag:\n%s", args, out)
		}
	}
}

// `caddy form-outbox VERB --help` describes that verb and lists only its flags (the
// shared ones under Global Flags).
func TestCLIHelpPerVerb(t *testing.T) {
	t.Parallel()
	for verb, c := range map[string]struct{ has, hasNot []string }{
		"list":   {has: []string{"--form", "--status", "--deliveries", "--cursor", "--json", "--address"}, hasNot: []string{"--format", "--spool"}},
		"export": {has: []string{"--format", "--form", "--address"}, hasNot: []string{"--json", "--deliveries", "--cursor"}},
		"retry":  {has: []string{"DELIVERY_ID", "--json", "--address"}, hasNot: []string{"--form", "--format", "--deliveries", "--spool"}},
		"replay": {has: []string{"--spool", "--storage"}, hasNot: []string{"--form", "--format"}},
	} {
		out, err := runCaddy(t, "form-outbox", verb, "--help")
		if err != nil {
			t.Fatalf("form-outbox %s --help: %v\n%s", verb, err, out)
		}
		for _, s := range c.has {
			if !strings.Contains(out, s) {
				t.Errorf("form-outbox %s --help does not mention %s:\n%s", verb, s, out)
			}
		}
		// The description may name other verbs' flags ('list --deliveries'); the flag
		// listing may not.
		_, flags, _ := strings.Cut(out, "\nFlags:")
		for _, s := range c.hasNot {
			if strings.Contains(flags, s) {
				t.Errorf("form-outbox %s --help mentions %s, a flag of another verb:\n%s", verb, s, out)
			}
		}
	}
}
