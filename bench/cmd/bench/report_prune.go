package main

import (
	"fmt"
	"strings"
	"time"
)

// pruneTarget is issue 21's target 3 for retention: pruning the history in bounded
// batches while intake p99 stays within 1.5x of its value without pruning.
func (r *report) pruneTarget(b *strings.Builder) {
	p := r.prune
	if p == nil {
		return
	}
	off, on := p.p99s()
	var notes []string
	if !p.duringPass {
		notes = append(notes, "a pass ended before its window did")
	}
	if p.left > 0 || p.pruned < p.n {
		notes = append(notes, fmt.Sprintf("%d of %d submissions pruned", p.pruned, p.n))
	}
	note := ""
	if len(notes) > 0 {
		note = "; " + strings.Join(notes, "; ")
	}
	fmt.Fprintf(b, "| Retention prunes %d old submissions in bounded batches while intake p99 at 32 connections (worker on) stays <= 1.5x its value without pruning | median of %d windows each: %s vs %s = %.2fx; batches of %d, longest transaction %s, %.0f submissions/s, %d old rows left%s | %s |\n",
		p.n, len(p.on), ms(on), ms(off), ratio(float64(on), float64(off)), p.batchSize, ms(p.longest), p.rowsPerSec(), p.left, note, verdict(p.ok()))
}

func (r *report) pruneSection(b *strings.Builder) {
	p := r.prune
	if p == nil {
		return
	}
	b.WriteString("\n## Retention under load (`-only prune`)\n\n")
	fmt.Fprintf(b, "%d submissions older than the retention (%s), all finished, are seeded into a schema of their own with one INSERT ... SELECT generate_series per table (2 sent deliveries, 2 attempts and the submission.received event each, UUIDv7 ids, every index in place, foreign-key triggers off while seeding): %s, then VACUUM ANALYZE %s. Real Caddies in the end-to-end configuration (worker on with its defaults, two webhooks per submission on the receiver) take intake from wrk at 32 connections for %v per window, after a %v unmeasured warm-up, in turn: one without retention, then one with `retention %s`, whose pruner starts its pass as the Caddy starts; each Caddy drains its backlog and stops before the next starts (stopping cuts a pass short; its open batch rolls back), and the tables are vacuumed before each. The target compares the medians of the p99s. The last Caddy with retention then runs its pass to the end. A sampler reads pg_stat_activity every %v through every window for open transactions running the pruner's statements: each is one batch of at most %d submissions (outbox/retention.go); a transaction's length is its start to the last sample that found it open (short by at most %v; one shorter than that may go unseen), the pass the first one's start to the last one's end. The end-of-pass log line gives the submissions the last pass pruned, and counts afterwards the old rows left in submissions, deliveries, attempts and events.\n\n",
		p.n, pruneRetention, p.seedTook.Round(time.Second/10), p.vacuum.Round(time.Second/10), r.cfg.dur, e2eWarmUp, pruneRetention, pruneSample, p.batchSize, pruneSample)
	b.WriteString("| Round | without retention | while pruning |\n|---|---|---|\n")
	for i := range max(len(p.off), len(p.on)) {
		cell := func(ps []point) string {
			if i >= len(ps) {
				return "-"
			}
			return fmt.Sprintf("%.0f/s, %s / %s", ps[i].rate, ms(ps[i].p50), ms(ps[i].p99))
		}
		fmt.Fprintf(b, "| %d | %s | %s |\n", i+1, cell(p.off), cell(p.on))
	}
	fmt.Fprintf(b, "\nThe last pass: %d submissions pruned in %v (%.0f submissions/s, with their deliveries, attempts and events), %d prune transactions seen (%d batches expected), median %s; the longest prune transaction of every pass %s. %d of %d old submissions gone, %d old rows left; every window with retention ran inside its pass: %v.\n",
		p.lastPass, p.pass.Round(time.Millisecond), p.rowsPerSec(), p.batches, p.expectedBatches, ms(p.median), ms(p.longest), p.pruned, p.n, p.left, p.duringPass)
}
