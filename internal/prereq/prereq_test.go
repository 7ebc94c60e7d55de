package prereq

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a T that records how Missing stopped it.
type recorder struct {
	name          string
	fatal, skip   string
	fatalf, skipf int
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatalf++
	r.fatal = fmt.Sprintf(format, args...)
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipf++
	r.skip = fmt.Sprintf(format, args...)
}

// Bare, a test that lacks a prerequisite fails, naming it and the command that runs it;
// under CI=true it fails even when scripts/test asked for skips; run by scripts/test it is
// skipped and written to the not-run file with that command.
func TestMissingFailsUnlessScriptsTestRecordsIt(t *testing.T) {
	const what = "root, for network namespaces"
	want := `go test ./internal/prereq -count=1 -run '^TestDrill$/^Partition$'`
	notRun := filepath.Join(t.TempDir(), "not-run")

	t.Setenv("CI", "")
	t.Setenv(EnvNotRun, "")
	bare := &recorder{name: "TestDrill/Partition"}
	Missing(bare, what)
	if bare.fatalf != 1 || bare.skipf != 0 || !strings.Contains(bare.fatal, what) || !strings.Contains(bare.fatal, want) {
		t.Errorf("bare: fatal %d %q, skip %d; want one failure naming %q and %q", bare.fatalf, bare.fatal, bare.skipf, what, want)
	}

	t.Setenv(EnvNotRun, notRun)
	t.Setenv("CI", "true")
	ci := &recorder{name: "TestDrill/Partition"}
	Missing(ci, what)
	if ci.fatalf != 1 || ci.skipf != 0 || !strings.Contains(ci.fatal, "CI must run every test") {
		t.Errorf("CI=true: fatal %d %q, skip %d; want a failure", ci.fatalf, ci.fatal, ci.skipf)
	}
	if _, err := os.Stat(notRun); err == nil {
		t.Errorf("CI=true recorded a test as not run")
	}

	t.Setenv("CI", "")
	script := &recorder{name: "TestDrill/Partition"}
	Missing(script, what)
	if script.skipf != 1 || script.fatalf != 0 {
		t.Fatalf("under scripts/test: fatal %d %q, skip %d; want a skip", script.fatalf, script.fatal, script.skipf)
	}
	b, err := os.ReadFile(notRun)
	if got := string(b); err != nil || got != "TestDrill/Partition\t"+what+"\t"+want+"\n" {
		t.Errorf("not-run file: %q, %v", got, err)
	}
}
