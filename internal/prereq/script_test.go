package prereq

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkOnly runs `scripts/test --check-only` as a user who is not root (nobody, when this
// test runs as root) with only the given environment, and returns its exit status and
// what it said.
func checkOnly(t *testing.T, env ...string) (int, string) {
	t.Helper()
	script, err := filepath.Abs("../../scripts/test")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-i", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp"}, env...)
	args = append(args, "bash", script, "--check-only")
	cmd := exec.Command("env", args...)
	if os.Geteuid() == 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "nobody", "--", "env"}, args...)...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	}
	t.Fatalf("run scripts/test --check-only: %v\n%s", err, out.String())
	return 0, ""
}

// As a user who is not root, without Chromium and with FORM_OUTBOX_TEST_DATABASE_URL set:
// scripts/test uses that database without starting one, says that the drills needing root
// and the browser tests will not run and how to run them or install Chromium, and goes on
// (exit 0). With CI=true the same missing privilege or Chromium is a failure (exit 1).
func TestScriptsTestWithoutRoot(t *testing.T) {
	db := "FORM_OUTBOX_TEST_DATABASE_URL=postgres://someone@db.example.com:5432/forms"
	code, out := checkOnly(t, db, "FORM_OUTBOX_CHROMIUM=/nonexistent/chromium")
	for _, want := range []string{
		"using the PostgreSQL database in FORM_OUTBOX_TEST_DATABASE_URL; not starting a local one",
		"not running as root: the drills that make network namespaces or mount a tmpfs will not run",
		"sudo ./scripts/test",
		"the browser tests will not run",
		"this machine lacks:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("without root or Chromium, the output lacks %q:\n%s", want, out)
		}
	}
	if code != 0 || strings.Contains(out, "FAILED") {
		t.Errorf("without root or Chromium, outside CI: exit %d, want 0:\n%s", code, out)
	}

	code, out = checkOnly(t, db, "CI=true", "FORM_OUTBOX_CHROMIUM=/nonexistent/chromium")
	if code != 1 || !strings.Contains(out, "FAILED: FORM_OUTBOX_CHROMIUM=/nonexistent/chromium is not an executable") ||
		!strings.Contains(out, "CI must run every test") {
		t.Errorf("without Chromium, CI=true: exit %d, want 1 naming Chromium:\n%s", code, out)
	}
	code, out = checkOnly(t, db, "CI=true", "FORM_OUTBOX_CHROMIUM=/bin/true")
	if code != 1 || !strings.Contains(out, "FAILED: not running as root") || !strings.Contains(out, "CI must run every test") {
		t.Errorf("without root, CI=true: exit %d, want 1 naming root:\n%s", code, out)
	}
}
