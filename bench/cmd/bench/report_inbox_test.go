package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func inboxReport(p50 time.Duration) *report {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := &report{cfg: &config{inboxN: 1_000_000, searchN: 100_000, inboxReqs: 50}, started: at, finished: at.Add(time.Minute),
		loadStart: "1.00 1.00 1.00", loadAfter: "2.00 2.00 2.00"}
	for _, st := range []string{"sqlite", "pg"} {
		for _, pg := range inboxPages {
			r.inbox = append(r.inbox, inboxPoint{store: st, page: pg.name, rows: 1_000_000, p50: p50, p99: 2 * p50, n: 50})
		}
	}
	return r
}

// The committed report gains the inbox rows and section and keeps every other line; a
// second splice replaces the first one's figures instead of adding to them.
func TestSpliceInboxKeepsTheRestOfTheReport(t *testing.T) {
	old, err := os.ReadFile("../../RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	// base is the report without an earlier run's inbox rows and section.
	var base []string
	inInbox := false
	for _, l := range strings.Split(string(old), "\n") {
		if strings.HasPrefix(l, "## ") {
			inInbox = l == "## Inbox"
		}
		if !inInbox && !hasAnyPrefix(l, inboxTargetPrefixes) {
			base = append(base, l)
		}
	}
	once, ok := inboxReport(3 * time.Millisecond).spliceInbox(strings.Join(base, "\n"))
	if !ok {
		t.Fatal("the committed RESULTS.md is not a report spliceInbox can update")
	}
	for _, l := range base {
		if !strings.Contains(once, l) {
			t.Errorf("the spliced report lost %q", l)
		}
	}
	twice, _ := inboxReport(7 * time.Millisecond).spliceInbox(once)
	want, _ := inboxReport(7 * time.Millisecond).spliceInbox(strings.Join(base, "\n"))
	if twice != want {
		t.Errorf("splicing twice differs from splicing the new figures once:\n%s", twice)
	}
	if n := strings.Count(twice, "## Inbox"); n != 1 {
		t.Errorf("%d Inbox sections, want 1", n)
	}
	if !strings.Contains(twice, "| SQLite inbox list page of 50 over 1000000 submissions p50 <= 50 ms (first / page 101 / filtered) | 7.00 ms / 7.00 ms / 7.00 ms | met |") {
		t.Errorf("the Targets table lacks the new SQLite row:\n%s", twice)
	}
	// The rows end the table: after its header and the rows already there.
	targets := twice[strings.Index(twice, "|---|---|---|"):strings.Index(twice, "## Intake")]
	if !strings.Contains(targets, "Caddy RSS under") || strings.Index(targets, "| SQLite inbox") < strings.Index(targets, "Caddy RSS under") {
		t.Errorf("the inbox rows are not at the end of the Targets table:\n%s", targets)
	}
	if !strings.Contains(targets, "| PostgreSQL inbox search over 1000000 submissions p50 <= 200 ms | 7.00 ms (p99 14.00 ms) | met |") {
		t.Errorf("the Targets table lacks the PostgreSQL search row:\n%s", targets)
	}
}
