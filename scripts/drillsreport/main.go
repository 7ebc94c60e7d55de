// Command drillsreport assembles docs/drills.md from the JSON files the e2e drills
// (e2e/drill_*_test.go, TestDrill*) write when FORM_OUTBOX_DRILL_RESULTS names a
// directory. scripts/drills runs the drills and then this program.
//
// Usage: go run ./scripts/drillsreport RESULTS_DIR OUTPUT.md
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/formoutbox/caddy-form-outbox/internal/drills"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: drillsreport RESULTS_DIR OUTPUT.md")
		os.Exit(2)
	}
	results, err := drills.Load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "drillsreport:", err)
		os.Exit(1)
	}
	if len(results) == 0 {
		fmt.Fprintf(os.Stderr, "drillsreport: no <drill>.json in %s\n", os.Args[1])
		os.Exit(1)
	}
	page := drills.Render(results, drills.Machine(), time.Now().UTC())
	if err := os.WriteFile(os.Args[2], []byte(page), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "drillsreport:", err)
		os.Exit(1)
	}
}
