package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// EnvDrillResults names a directory where each drill writes <drill>.json, the figures
// scripts/drills assembles into the published table.
const envDrillResults = "FORM_OUTBOX_DRILL_RESULTS"

// drillFigures is one drill's row of that table. Lost and DuplicateSubmissions are
// asserted to be zero before the file is written; the rest are what the drill measured.
type drillFigures struct {
	Drill                string  `json:"drill"`
	Submissions          int     `json:"submissions"`
	Acknowledged         int     `json:"acknowledged"`
	Lost                 int     `json:"lost"`
	DuplicateSubmissions int     `json:"duplicate_submissions"`
	DuplicateSends       int     `json:"duplicate_sends"`
	AmbiguousAttempts    int     `json:"ambiguous_attempts"`
	RecoverySeconds      float64 `json:"recovery_seconds"`
	Notes                string  `json:"notes"`
}

// publishDrill writes f when envDrillResults is set; a failed write fails the drill, so
// the table is never assembled from a stale file.
func publishDrill(t *testing.T, f drillFigures) {
	t.Helper()
	dir := os.Getenv(envDrillResults)
	if dir == "" {
		return
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("drill results: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, f.Drill+".json"), append(b, '\n'), 0o644); err != nil {
		t.Fatalf("drill results: %v", err)
	}
}
