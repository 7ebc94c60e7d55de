package main

import (
	"reflect"
	"testing"
)

// A target not met makes the run fail with its line; met and measured ones do not.
func TestUnmetListsTargetsNotMet(t *testing.T) {
	md := "## Targets\n\n| Target | Measured | Verdict |\n|---|---|---|\n" +
		"| Intake >= 2.0x pgbench | 2764/s vs 1028/s = 2.69x | met |\n" +
		"| End to end >= 1.5x pgbench | accepted 866/s (0.50x) | **not met** |\n" +
		"| Instructions per intake request | 292999 | measured |\n" +
		"| p99 at 64 <= 50 ms | 88.25 ms | **not met** |\n"
	got := unmet(md)
	want := []string{"UNMET: End to end >= 1.5x pgbench: accepted 866/s (0.50x)", "UNMET: p99 at 64 <= 50 ms: 88.25 ms"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("unmet = %q, want %q", got, want)
	}
}

// The sampled statements are named by the store's queries' first words, however the
// whitespace of the query files runs.
func TestActiveLabel(t *testing.T) {
	for q, want := range map[string]string{
		"WITH s AS (\n\tINSERT INTO submissions (id, form": "accept",
		"WITH c AS (\n\tSELECT * FROM unnest($1::text[]":   "complete",
		"WITH u AS (\n\tUPDATE deliveries SET":             "complete",
		"WITH due AS (\n\tSELECT id, next_attempt_at":      "claim",
		"COMMIT": "begin/commit",
		"SELECT EXISTS (SELECT 1 FROM suppressions": "other",
	} {
		if got := activeLabel(q); got != want {
			t.Errorf("activeLabel(%q) = %q, want %q", q, got, want)
		}
	}
}
