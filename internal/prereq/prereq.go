// Package prereq decides what a test does when this machine lacks something it needs
// (root for the drills' network namespaces and tmpfs mounts, Chromium, PostgreSQL's
// server binaries). A test never passes by skipping unseen: run bare (`go test`), it
// fails with what is missing; under CI=true it fails, since CI has everything and a
// missing prerequisite there is a broken CI; run by ./scripts/test as a user who lacks
// it, it is skipped and written to the file EnvNotRun names, so the script runs
// everything else and then names every test it did not run and the command that runs it.
package prereq

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// EnvNotRun names the file scripts/test reads: one line per test not run, "name TAB what
// it lacks TAB the command that runs it".
const EnvNotRun = "FORM_OUTBOX_NOT_RUN"

// T is the part of testing.TB that Missing uses.
type T interface {
	Helper()
	Name() string
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Missing stops t, which needs what (e.g. "root, for network namespaces and nftables").
func Missing(t T, what string) {
	t.Helper()
	run := Command(t.Name())
	switch {
	case os.Getenv("CI") == "true":
		t.Fatalf("needs %s, which this CI machine lacks; CI must run every test (%s)", what, run)
	case os.Getenv(EnvNotRun) == "":
		t.Fatalf("needs %s; run it where that is available: sudo env \"PATH=$PATH\" %s (./scripts/test skips it and names it at the end)", what, run)
	default:
		line := strings.Join([]string{t.Name(), what, run}, "\t") + "\n"
		if err := appendLine(os.Getenv(EnvNotRun), line); err != nil {
			t.Fatalf("needs %s; and recording it for scripts/test failed: %v", what, err)
		}
		t.Skipf("not run: needs %s (%s)", what, run)
	}
}

// Command is the go test line that runs only the test named name, in the package of the
// working directory (a test's), relative to the module root.
func Command(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("go test %s -count=1 -run '%s'", packageDir(), strings.Join(parts, "/"))
}

// packageDir is the working directory relative to the module root ("./e2e"), or "." when
// no go.mod is found above it.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		if filepath.Dir(dir) == dir {
			return "."
		}
	}
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
