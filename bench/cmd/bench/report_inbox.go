package main

import (
	"fmt"
	"strings"
	"time"
)

var storeNames = map[string]string{"sqlite": "SQLite", "pg": "PostgreSQL"}

func (r *report) inboxGet(store, page string) (inboxPoint, bool) {
	for _, p := range r.inbox {
		if p.store == store && p.page == page {
			return p, true
		}
	}
	return inboxPoint{}, false
}

// inboxTargetPrefixes start the Targets rows inboxTargets writes, which is how
// spliceInbox finds the previous run's.
var inboxTargetPrefixes = []string{"| SQLite inbox ", "| PostgreSQL inbox "}

// inboxTargets writes the Targets rows of issue 15's inbox speed targets.
func (r *report) inboxTargets(b *strings.Builder) {
	for _, st := range []string{"sqlite", "pg"} {
		var lists []inboxPoint
		for _, page := range []string{"first", "deep", "filtered"} {
			if p, ok := r.inboxGet(st, page); ok {
				lists = append(lists, p)
			}
		}
		if len(lists) == 3 {
			worst, cells := time.Duration(0), []string{}
			for _, p := range lists {
				worst = max(worst, p.p50)
				cells = append(cells, ms(p.p50))
			}
			fmt.Fprintf(b, "| %s inbox list page of 50 over %d submissions p50 <= 50 ms (first / page %d / filtered) | %s | %s |\n",
				storeNames[st], lists[0].rows, inboxDepth+1, strings.Join(cells, " / "), verdict(worst <= 50*time.Millisecond))
		}
		if p, ok := r.inboxGet(st, "search"); ok {
			fmt.Fprintf(b, "| %s inbox search over %d submissions p50 <= 200 ms | %s (p99 %s) | %s |\n",
				storeNames[st], p.rows, ms(p.p50), ms(p.p99), verdict(p.p50 <= 200*time.Millisecond))
		}
	}
}

// inboxSection writes the "## Inbox" section. It dates itself and carries its own load
// averages because spliceInbox puts it into a report whose header is another run's.
func (r *report) inboxSection(b *strings.Builder) {
	b.WriteString("## Inbox\n\n")
	mode := "`go run ./cmd/bench -only inbox` or a full run"
	if r.cfg.quick {
		mode = "quick mode (small stores; not the reference numbers)"
	}
	fmt.Fprintf(b, "Measured %s to %s, %s, load average at start %s, at the end %s.\n\n",
		r.started.UTC().Format("2006-01-02 15:04"), r.finished.UTC().Format("15:04 MST"), mode, r.loadStart, r.loadAfter)
	fmt.Fprintf(b, "Server time of one page: `inbox.Handler.Serve` (as Caddy calls it after authenticating the operator) answering a GET into a recorder, in process, timed from the call to the last byte of HTML: the store's queries (the form list and the page's search) and the template. %d requests per page after %d warm-up ones, one at a time. ", r.cfg.inboxReqs, inboxWarmup)
	fmt.Fprintf(b, "Each store is seeded fresh (not measured) through SQL into the tables its own Open created: %d submissions for the list pages and, separately, %d for the search; a year of traffic on four forms (contact 50%%, newsletter 25%%, quote 15%%, support 10%%) with 3 to 5 fields, 90%% accepted, 7%% spam, 3%% quarantined, two deliveries each (1%% of accepted submissions with a dead one, 0.5%% pending, skipped for spam and quarantine); the searched word is in one message in 1000, so the first page of results is found about halfway through the newest-first scan. PostgreSQL is vacuumed and analyzed after the seed (autovacuum's work); SQLite has no statistics (the store never runs ANALYZE).\n\n", r.cfg.inboxN, r.cfg.searchN)
	b.WriteString("| Page | Submissions | SQLite p50 / p99 | PostgreSQL p50 / p99 |\n|---|---|---|---|\n")
	for _, pg := range inboxPages {
		var cells []string
		rows := 0
		for _, st := range []string{"sqlite", "pg"} {
			p, ok := r.inboxGet(st, pg.name)
			if !ok {
				cells = append(cells, "-")
				continue
			}
			rows = p.rows
			cells = append(cells, ms(p.p50)+" / "+ms(p.p99))
		}
		fmt.Fprintf(b, "| %s | %d | %s |\n", pg.what, rows, strings.Join(cells, " | "))
	}
}

// spliceInbox puts this run's inbox figures into old, the report of an earlier run, for a
// run of the inbox part alone (-only inbox): its Targets rows replace the earlier inbox
// rows at the end of that table, and its section replaces the earlier one or goes before
// the hand-written notes, so the other parts' figures stay as their run measured them.
// It reports false when old is not a report it can splice into.
func (r *report) spliceInbox(old string) (string, bool) {
	lines := strings.Split(old, "\n")
	var out []string
	// inTable: inside the Targets table, which ends at its first blank line (the one
	// after the heading comes before it).
	inTargets, inTable, targetsDone, skipping, placed := false, false, false, false, false
	var targets, section strings.Builder
	r.inboxTargets(&targets)
	r.inboxSection(&section)
	if len(r.failures) > 0 {
		section.WriteString("\nFailures in this run of the inbox part:\n\n")
		for _, f := range r.failures {
			section.WriteString("- " + f + "\n")
		}
	}
	for _, l := range lines {
		if skipping && !strings.HasPrefix(l, "## ") {
			continue
		}
		skipping = false
		switch {
		case l == "## Targets":
			inTargets = true
		case inTargets && strings.HasPrefix(l, "|"):
			inTable = true
			if hasAnyPrefix(l, inboxTargetPrefixes) {
				continue
			}
		case inTable && l == "":
			out = append(out, strings.Split(strings.TrimSuffix(targets.String(), "\n"), "\n")...)
			inTargets, inTable, targetsDone = false, false, true
		case l == "## Inbox":
			out = append(out, strings.Split(section.String(), "\n")...)
			skipping, placed = true, true
			continue
		case strings.HasPrefix(l, "## Reading these numbers") && !placed:
			out = append(out, strings.Split(section.String(), "\n")...)
			placed = true
		}
		out = append(out, l)
	}
	if !targetsDone {
		return "", false
	}
	if !placed {
		out = append(out, "", strings.TrimSuffix(section.String(), "\n"))
	}
	return strings.Join(out, "\n"), true
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
