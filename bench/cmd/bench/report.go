package main

import (
	"fmt"
	"strings"
	"time"
)

type row struct {
	kind  string
	conns int
	p     point
}

type report struct {
	cfg               *config
	machine           string
	started, finished time.Time
	loadStart         string
	loadAfter         string
	rows              []row
	failures          []string
	rssKB, rssHWMKB   int
	burnOurs          float64
	burnRiver         float64
	burnSweep         []burnPoint // every burn-down setting, the reference first
	c2sOn, c2sOff     [2]time.Duration
	claim             [2][3]time.Duration // rows, p50, p99
	claimSeed         [2][2]time.Duration // the history's seeding, its VACUUM ANALYZE
	prune             *pruneResult        // retention under load (prune.go), nil when not run
	inbox             []inboxPoint
	uploads           *uploadsResult // uploads.go
	// The end-to-end part (e2e.go): its points, and its own pgbench and SQLite
	// one-commit-per-request baselines, measured in the same part.
	e2e             []e2ePoint
	e2ePgbench      point
	e2ePgbenchCPU   time.Duration
	e2eSqliteAccept point
	idle            []idleResult // idle.go
	// instructions per intake request (instr.go), 0 when not measured.
	instr instrResult
}

func (r *report) add(kind string, conns int, p point) {
	logf("  %-14s %3d conns: %8.0f/s p50 %v p99 %v success %.3f", kind, conns, p.rate, p.p50.Round(10*time.Microsecond), p.p99.Round(10*time.Microsecond), p.success)
	r.rows = append(r.rows, row{kind, conns, p})
}

func (r *report) fail(what string, err error) {
	logf("FAILED %s: %v", what, err)
	r.failures = append(r.failures, fmt.Sprintf("%s: %v", what, err))
}

func (r *report) get(kind string, conns int) (point, bool) {
	for _, x := range r.rows {
		if x.kind == kind && x.conns == conns {
			return x.p, true
		}
	}
	return point{}, false
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func (r *report) markdown() string {
	var b strings.Builder
	mode := "full"
	if r.cfg.quick {
		mode = "quick (smoke run: short points, small N; not the reference numbers)"
	}
	fmt.Fprintf(&b, "# form_outbox benchmark results\n\nRun: %s, %s to %s (%s), mode %s. Command: `cd bench && go run ./cmd/bench`.\n\n",
		r.started.UTC().Format("2006-01-02"), r.started.UTC().Format("15:04"), r.finished.UTC().Format("15:04 MST"),
		r.finished.Sub(r.started).Round(time.Second), mode)
	b.WriteString("## Machine\n\n" + r.machine)
	fmt.Fprintf(&b, "- Load average at the end: %s\n\n", r.loadAfter)

	b.WriteString("## Targets\n\n| Target | Measured | Verdict |\n|---|---|---|\n")
	if pg, ok := r.get("pg-caddy", 32); ok {
		base, _ := r.get("pgbench", 32)
		x := ratio(pg.rate, base.rate)
		fmt.Fprintf(&b, "| PostgreSQL intake at 32 connections >= 2.0x pgbench (per-request transaction) | %.0f/s vs %.0f/s = %.2fx | %s |\n", pg.rate, base.rate, x, verdict(x >= 2.0))
	}
	if pg, ok := r.get("pg-caddy", 64); ok {
		fmt.Fprintf(&b, "| PostgreSQL intake p99 at 64 connections <= 50 ms | %s | %s |\n", ms(pg.p99), verdict(pg.p99 <= 50*time.Millisecond && pg.p99 > 0))
	}
	if sq, ok := r.get("sqlite-caddy", 32); ok {
		base, _ := r.get("sqlite-accept", 32)
		x := ratio(sq.rate, base.rate)
		fmt.Fprintf(&b, "| SQLite intake at 32 connections >= 2.0x its one-commit-per-request rate | %.0f/s vs %.0f/s = %.2fx | %s |\n", sq.rate, base.rate, x, verdict(x >= 2.0))
	}
	if r.burnRiver > 0 {
		x := ratio(r.burnOurs, r.burnRiver)
		fmt.Fprintf(&b, "| Worker burn-down of %d >= 1.0x River | %.0f/s vs %.0f/s = %.2fx | %s |\n", r.cfg.burnN, r.burnOurs, r.burnRiver, x, verdict(x >= 1.0))
	}
	if len(r.burnSweep) > 1 {
		ours, river := r.burnSweep[0], r.burnSweep[0]
		for _, p := range r.burnSweep {
			if p.ours > ours.ours {
				ours = p
			}
			if p.river > river.river {
				river = p
			}
		}
		x := ratio(ours.ours, river.river)
		fmt.Fprintf(&b, "| Worker burn-down >= 1.0x River, each at its best of %d settings | %.0f/s (%d workers, batch %d) vs %.0f/s (%d workers) = %.2fx | %s |\n",
			len(r.burnSweep), ours.ours, ours.set.workers, ours.set.batch, river.river, river.set.workers, x, verdict(x >= 1.0))
	}
	if r.c2sOn[0] > 0 {
		fmt.Fprintf(&b, "| Commit-to-send p50 <= 20 ms with notifications on | %s (p99 %s) | %s |\n", ms(r.c2sOn[0]), ms(r.c2sOn[1]), verdict(r.c2sOn[0] <= 20*time.Millisecond))
	}
	if r.claim[1][1] > 0 {
		x := ratio(float64(r.claim[1][1]), float64(r.claim[0][1]))
		fmt.Fprintf(&b, "| Claim p50 at %d finished rows <= 1.5x that at %d | %s vs %s = %.2fx | %s |\n", int(r.claim[1][0]), int(r.claim[0][0]), ms(r.claim[1][1]), ms(r.claim[0][1]), x, verdict(x <= 1.5))
	}
	if r.rssKB > 0 {
		fmt.Fprintf(&b, "| Caddy RSS under the 64-connection PostgreSQL intake load <= 150 MB | peak sampled %.1f MB (VmHWM %.1f MB) | %s |\n", float64(r.rssKB)/1024, float64(r.rssHWMKB)/1024, verdict(r.rssHWMKB <= 150*1024))
	}
	r.pruneTarget(&b)
	r.inboxTargets(&b)
	r.uploadsTargets(&b)
	r.e2eTargets(&b)
	r.idleTargets(&b)
	r.instrTargets(&b)

	b.WriteString("\n## Intake (submissions/s, p50 / p99)\n\n")
	b.WriteString("`respond`: Caddy answering a static 200 on the same server (HTTP ceiling). `pgbench`: the same INSERT transaction (submission + 2 deliveries + event), one commit per transaction, at the same concurrency (mean latency only). `pg-accept` / `sqlite-accept`: the store's own `Accept`, one commit per request, from Go, no HTTP. `pg-caddy` / `sqlite-caddy`: a real Caddy built from ../cmd/caddy with the plugin (group commit) running `worker off` (intake only: the same writes as pgbench), driven by wrk with N keep-alive connections in a closed loop, each request a distinct submission; every 2xx was committed with synchronous_commit=on / SQLite synchronous=FULL, and after each point the bench checks that the store holds at least as many new submissions as answers of success.\n\n")
	kinds := []string{"respond", "pgbench", "pg-accept", "pg-caddy", "sqlite-accept", "sqlite-caddy"}
	b.WriteString("| conns |")
	for _, k := range kinds {
		b.WriteString(" " + k + " |")
	}
	b.WriteString("\n|---|")
	for range kinds {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, c := range r.cfg.conns {
		fmt.Fprintf(&b, "| %d |", c)
		for _, k := range kinds {
			p, ok := r.get(k, c)
			if !ok {
				b.WriteString(" - |")
				continue
			}
			cell := fmt.Sprintf(" %.0f/s, %s / %s", p.rate, ms(p.p50), ms(p.p99))
			if k == "pgbench" {
				cell = fmt.Sprintf(" %.0f/s, mean %s", p.rate, ms(p.p50))
			}
			if p.success < 0.999 {
				cell += fmt.Sprintf(" (success %.1f%%)", p.success*100)
			}
			b.WriteString(cell + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Worker\n\n| Measure | Value |\n|---|---|\n")
	fmt.Fprintf(&b, "| Burn-down of %d due deliveries, no-op provider, %d workers, batch %d | form_outbox %.0f/s, River %.0f/s |\n", r.cfg.burnN, burnWorkers, burnBatch, r.burnOurs, r.burnRiver)
	for _, p := range r.burnSweep[min(1, len(r.burnSweep)):] {
		fmt.Fprintf(&b, "| Burn-down of %d, %d workers, batch %d (-burnsweep) | form_outbox %.0f/s, River %.0f/s |\n", r.cfg.burnN, p.set.workers, p.set.batch, p.ours, p.river)
	}
	fmt.Fprintf(&b, "| Commit-to-send, notifications on (LISTEN/NOTIFY, another pool) | p50 %s, p99 %s |\n", ms(r.c2sOn[0]), ms(r.c2sOn[1]))
	fmt.Fprintf(&b, "| Commit-to-send, notifications off (poll interval %v) | p50 %s, p99 %s |\n", offPollInterval, ms(r.c2sOff[0]), ms(r.c2sOff[1]))
	for i, c := range r.claim {
		if c[1] > 0 {
			fmt.Fprintf(&b, "| Claim of 10 due rows with %d finished rows (vacuumed, analyzed, warm; history seeded in %v, VACUUM ANALYZE %v) | p50 %s, p99 %s |\n",
				int(c[0]), r.claimSeed[i][0].Round(time.Second/10), r.claimSeed[i][1].Round(time.Second/10), ms(c[1]), ms(c[2]))
		}
	}
	r.pruneSection(&b)
	if len(r.inbox) > 0 {
		b.WriteString("\n")
		r.inboxSection(&b)
	}
	r.uploadsSection(&b)
	r.e2eSection(&b)
	r.instrSection(&b)
	if len(r.failures) > 0 {
		b.WriteString("\n## Failures in this run\n\n")
		for _, f := range r.failures {
			b.WriteString("- " + f + "\n")
		}
	}
	return b.String()
}
