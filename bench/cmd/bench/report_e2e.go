package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func us(d time.Duration) string { return fmt.Sprintf("%.0f us", float64(d)/float64(time.Microsecond)) }

// pgbenchPerTx is the CPU of one pgbench transaction: client and backends.
func (r *report) pgbenchPerTx() time.Duration {
	n := r.e2ePgbench.rate * r.cfg.dur.Seconds()
	if n <= 0 {
		return 0
	}
	return time.Duration(float64(r.e2ePgbenchCPU) / n)
}

func (r *report) e2eAt(storage, target string, conns int) (e2ePoint, bool) {
	for _, e := range r.e2e {
		if e.storage == storage && e.target == target && e.conns == conns {
			return e, true
		}
	}
	return e2ePoint{}, false
}

// e2eTargets are issue 21's targets 1 and 4 (docs/design.md, 'Benchmarks').
func (r *report) e2eTargets(b *strings.Builder) {
	base := r.e2ePgbench.rate
	if e, ok := r.e2eAt("postgres", "webhook", 32); ok && base > 0 {
		acc, del := ratio(e.p.rate, base), ratio(e.delivered, base)
		ok := acc >= 1.5 && del >= 1.5 && e.backlogEnd <= e.backlogStart+int64(2*32)
		fmt.Fprintf(b, "| End to end, worker on, 2 webhooks, PostgreSQL, 32 connections: accepted/s and delivered/s >= 1.5x pgbench, backlog not growing | accepted %.0f/s (%.2fx), delivered %.0f/s (%.2fx) vs pgbench %.0f/s; backlog %d -> %d deliveries | %s |\n",
			e.p.rate, acc, e.delivered, del, base, e.backlogStart, e.backlogEnd, verdict(ok))
	}
	if e, ok := r.e2eAt("postgres", "webhook", 64); ok {
		fmt.Fprintf(b, "| End to end, worker on, PostgreSQL: intake p99 at 64 connections <= 50 ms | %s | %s |\n", ms(e.p.p99), verdict(e.p.p99 > 0 && e.p.p99 <= 50*time.Millisecond))
	}
	if e, ok := r.e2eAt("sqlite", "webhook", 32); ok && r.e2eSqliteAccept.rate > 0 {
		x := ratio(e.p.rate, r.e2eSqliteAccept.rate)
		fmt.Fprintf(b, "| SQLite with the worker on: intake at 32 connections >= 2.0x its one-commit-per-request rate | %.0f/s vs %.0f/s = %.2fx (delivered %.0f/s, backlog %d -> %d) | %s |\n",
			e.p.rate, r.e2eSqliteAccept.rate, x, e.delivered, e.backlogStart, e.backlogEnd, verdict(x >= 2.0))
	}
}

func (r *report) e2eSection(b *strings.Builder) {
	if len(r.e2e) == 0 {
		return
	}
	b.WriteString("\n## End to end, worker on (`-only e2e`)\n\n")
	b.WriteString("A real Caddy built from ../cmd/caddy with the plugin in its default configuration (worker on: concurrency, batch and notifications at their defaults), driven by wrk as in the intake table. `webhook`: each submission routed to two webhooks on a second Caddy that answers `respond 200` on loopback; `file`: to two e-mail recipients through the development file provider. Before each point the backlog is drained; accepted/s is intake's answers of success, delivered/s the deliveries sent during the load / 2; the backlog is the deliveries not yet sent at the start and at the end of the load, and drain the time the worker then took to catch up. CPU is read from /proc (utime + stime) from the start of the load to the end of the drain: the Caddy under test and its PostgreSQL backends (application_name), divided by the submissions answered; the receiver's is apart. pgbench (the per-request transaction of the intake table, 32 clients, same run) is measured the same way: its client and its backends.\n\n")
	fmt.Fprintf(b, "pgbench at 32 clients: %.0f/s, CPU %s per transaction. SQLite one-commit-per-request `Accept` at 32: %.0f/s.\n\n", r.e2ePgbench.rate, us(r.pgbenchPerTx()), r.e2eSqliteAccept.rate)
	now, ok1 := r.e2eAt("postgres", "webhook", 32)
	old, ok2 := r.e2eAt("postgres", e2eOldTarget, 32)
	if ok1 && ok2 {
		fmt.Fprintf(b, "Worker defaults (concurrency %d, batch %d) against the old ones (%s), same run, PostgreSQL, 32 connections: delivered %.0f/s vs %.0f/s = %.2fx, CPU per submission %s vs %s.\n\n",
			outbox.DefaultConcurrency, outbox.DefaultBatch, strings.ReplaceAll(e2eOldWorker, ";", ", "), now.delivered, old.delivered, ratio(now.delivered, old.delivered),
			us(now.perSubmission()), us(old.perSubmission()))
	}
	b.WriteString("| store | target | conns | accepted/s, p50 / p99 | delivered/s | backlog start -> end | drain | CPU per submission (Caddy + PostgreSQL) | receiver CPU per submission | PostgreSQL busy in (samples) |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, e := range r.e2e {
		drain := e.drain.Round(10 * time.Millisecond).String()
		if !e.drained {
			drain = "> " + e2eDrainLimit.String() + " (not drained)"
		}
		var recv time.Duration
		if e.p.answered > 0 {
			recv = e.cpuRecv / time.Duration(e.p.answered)
		}
		fmt.Fprintf(b, "| %s | %s | %d | %.0f/s, %s / %s | %.0f/s | %d -> %d | %s | %s (%s + %s) | %s | %s |\n",
			e.storage, e.target, e.conns, e.p.rate, ms(e.p.p50), ms(e.p.p99), e.delivered, e.backlogStart, e.backlogEnd, drain,
			us(e.perSubmission()), us(perSub(e.cpuCaddy, e.p.answered)), us(perSub(e.cpuPG, e.p.answered)), us(recv), activeShares(e.pgActive))
	}
}

func perSub(d time.Duration, n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	return d / time.Duration(n)
}

var unmetRE = regexp.MustCompile(`(?m)^\| (.+?) \| (.+?) \| \*\*not met\*\* \|$`)

// unmet lists the report's targets that were not met, one line each.
func unmet(md string) []string {
	var out []string
	for _, m := range unmetRE.FindAllStringSubmatch(md, -1) {
		out = append(out, fmt.Sprintf("UNMET: %s: %s", m[1], m[2]))
	}
	return out
}

// activeShares writes the sampled statements as shares, largest first.
func activeShares(m map[string]int) string {
	total := 0
	for _, n := range m {
		total += n
	}
	if total == 0 {
		return "-"
	}
	labels := make([]string, 0, len(m))
	for l := range m {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool {
		return m[labels[i]] > m[labels[j]] || m[labels[i]] == m[labels[j]] && labels[i] < labels[j]
	})
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = fmt.Sprintf("%s %d%%", l, m[l]*100/total)
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" (%d)", total)
}
