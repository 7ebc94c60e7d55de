package e2e

import "testing"

// drillFigures is one drill's row of the published table (internal/drills.Result).
type drillFigures = drillResult

// publishDrill checks and publishes f exactly as publish does (drill_test.go): every
// drill reports through one writer in one format.
func publishDrill(t *testing.T, f drillFigures) {
	t.Helper()
	publish(t, f)
}
