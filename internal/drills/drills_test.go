package drills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What a drill writes is what the page shows: one table row per file, sorted by drill,
// and a paragraph per drill with its notes.
func TestWriteLoadRender(t *testing.T) {
	dir := t.TempDir()
	for _, r := range []Result{
		{Drill: "partition", Submissions: 500, Acknowledged: 500, RecoverySeconds: 1.25, Notes: "25s drop.", Ran: "2030-01-01 09:00 UTC"},
		{Drill: "soak", Submissions: 100000, Acknowledged: 100000, RecoverySeconds: 95.5, Notes: "5 kill -9 of Caddy", Ran: "2030-01-02 01:00 UTC"},
		{Drill: "another", Submissions: 3, Acknowledged: 2, DuplicateSends: 1, AmbiguousAttempts: 1, Notes: "from the other drills"},
	} {
		if err := r.Write(dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a result"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Drill != "another" || rs[1].Drill != "partition" || rs[2].Drill != "soak" {
		t.Fatalf("loaded %+v, want another, partition, soak", rs)
	}
	// A result written without a date is dated when it is written.
	if ran, err := time.Parse(ranFormat, rs[0].Ran); err != nil || time.Since(ran) > time.Hour || time.Until(ran) > time.Minute {
		t.Errorf("another: Ran %q, want the time of Write", rs[0].Ran)
	}
	page := Render(rs, "2 × test CPU", time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC))
	for _, want := range []string{
		"Machine: 2 × test CPU.",
		"Assembled: 2030-01-02 03:04 UTC.",
		"| another | 3 | 2 | 0 | 0 | 1 | 1 | 0.0 |\n| partition | 500 | 500 | 0 | 0 | 0 | 0 | 1.2 |\n" +
			"| soak | 100000 | 100000 | 0 | 0 | 0 | 0 | 95.5 |",
		"## partition\n\nPostgreSQL runs in a network namespace",
		"This run (2030-01-01 09:00 UTC): 25s drop.\n",
		"## another\n\nThis run (" + rs[0].Ran + "): from the other drills.\n",
		"## soak\n\nOne Caddy on its own PostgreSQL",
		"The soak is this run at 100000 submissions (scripts/soak",
		"This run (2030-01-02 01:00 UTC): 5 kill -9 of Caddy.\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
}

func TestLoadRejectsAFileWithoutDrillName(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{"submissions": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "no drill name") {
		t.Fatalf("Load = %v, want an error naming the missing drill name", err)
	}
}
