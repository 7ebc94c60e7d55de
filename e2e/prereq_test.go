package e2e

import (
	"os"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/internal/prereq"
)

// needRoot stops t unless this process is root (prereq.Missing: fails bare and under CI,
// skipped and named at the end by scripts/test run as another user).
func needRoot(t testing.TB, forWhat string) {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(t, "root, for "+forWhat)
	}
}
