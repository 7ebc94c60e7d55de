// Command bench measures form_outbox side by side with its baselines on this machine and
// writes bench/RESULTS.md (docs/design.md, 'Benchmarks'). Every figure that a target checks
// is a ratio against a baseline measured in the same run.
//
//	cd bench && go run ./cmd/bench          # full run (about 15 minutes)
//	cd bench && go run ./cmd/bench -quick   # smoke run (a minute or two)
//
// It needs the PostgreSQL server the tests use (FORM_OUTBOX_TEST_DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/test) and its pgbench; it builds ../cmd/caddy itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

type config struct {
	quick    bool
	dsn      string
	out      string
	dur      time.Duration // per intake point
	conns    []int
	burnN    int
	claimLow int
	claimHi  int
	latN     int
	// pruneN old submissions are seeded for the retention part (prune.go).
	pruneN int
	// inboxN submissions are seeded for the inbox's list pages, searchN for its search;
	// inboxReqs requests are timed per page.
	inboxN, searchN, inboxReqs int
	tmp                        string
	caddyBin                   string
	// caddyProfile, when set, is a directory that receives CPU and allocation
	// profiles of the PostgreSQL Caddy during each of its intake points
	// (caddy-pg-<conns>.cpu.pprof, caddy-pg-<conns>.allocs.pprof).
	caddyProfile string
	only         map[string]bool // empty: every part
	// e2eWorker, when set, replaces the end-to-end Caddy's worker defaults: worker
	// subdirectives separated by ';' (-e2eworker 'concurrency 64;batch 100'), for sweeps.
	e2eWorker string
	// burnSweep are the burn-down settings, the reference one first (-burnsweep).
	burnSweep []burnSetting
	// e2ePoints, when set, keeps the end-to-end points whose "storage target" contains it.
	e2ePoints string
	// e2eDSN is appended to the end-to-end Caddy's PostgreSQL DSN (e.g. pool_max_conns=8).
	e2eDSN string
}

// runs reports whether the part named part is part of this run (-only).
func (c *config) runs(part string) bool { return len(c.only) == 0 || c.only[part] }

func main() {
	var (
		cfg     config
		claimHi int
		pruneN  int
	)
	flag.BoolVar(&cfg.quick, "quick", false, "smoke run: short points, small N")
	flag.StringVar(&cfg.out, "out", "RESULTS.md", "where to write the report (relative to bench/)")
	only := flag.String("only", "", "comma-separated parts to run (intake,e2e,instr,burn,c2s,claim,prune,inbox,uploads,idle), for profiling; the report then lacks the others")
	conns := flag.String("conns", "1,8,32,64", "intake concurrency levels")
	cpuprofile := flag.String("cpuprofile", "", "write the bench process's CPU profile here (the in-process worker and stores)")
	flag.StringVar(&cfg.e2eWorker, "e2eworker", "", "end-to-end part: worker subdirectives for its Caddy, ';'-separated (default: none, the defaults users run)")
	flag.StringVar(&cfg.e2eDSN, "e2edsn", "", "end-to-end part: DSN parameters appended to its Caddy's PostgreSQL DSN, e.g. pool_max_conns=8")
	flag.StringVar(&cfg.e2ePoints, "e2epoints", "", "end-to-end part: only the points whose \"storage target\" contains this (e.g. \"postgres file\")")
	burnSweep := flag.String("burnsweep", defaultBurnSweep, "burn-down: more settings after the reference (100 workers, batch 100), as workers/batch pairs (each side at its best, issue 21); empty for the reference alone")
	instrN := flag.Int("instr-child", 0, "internal: serve this many intake requests in process and exit (run under callgrind by -only instr)")
	flag.IntVar(&pruneN, "prunen", 0, "retention part: the old submissions it seeds (default 1000000, -quick 100000)")
	flag.IntVar(&claimHi, "claimhi", 0, "claim part: the finished rows of its second phase (default 10000000, -quick 50000)")
	flag.StringVar(&cfg.caddyProfile, "caddyprofile", "", "write CPU and allocation profiles of the PostgreSQL Caddy during each intake point into this directory")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: cpu profile:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	cfg.only = map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.only[p] = true
		}
	}
	cfg.dsn = os.Getenv("FORM_OUTBOX_TEST_DATABASE_URL")
	if cfg.dsn == "" {
		cfg.dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	for _, c := range strings.Split(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "bench: -conns: want positive integers, got", c)
			os.Exit(2)
		}
		cfg.conns = append(cfg.conns, n)
	}
	cfg.burnSweep = []burnSetting{{burnWorkers, burnBatch}}
	for _, p := range strings.Split(*burnSweep, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		var set burnSetting
		if _, err := fmt.Sscanf(p, "%d/%d", &set.workers, &set.batch); err != nil || set.workers <= 0 || set.batch <= 0 {
			fmt.Fprintln(os.Stderr, "bench: -burnsweep: want workers/batch pairs, got", p)
			os.Exit(2)
		}
		cfg.burnSweep = append(cfg.burnSweep, set)
	}
	if *instrN > 0 {
		if err := instrChild(cfg.dsn, *instrN); err != nil {
			fmt.Fprintln(os.Stderr, "bench: instructions child:", err)
			os.Exit(1)
		}
		return
	}
	if cfg.quick {
		cfg.dur, cfg.burnN, cfg.claimLow, cfg.claimHi, cfg.latN = 2*time.Second, 5000, 10_000, 50_000, 30
		cfg.inboxN, cfg.searchN, cfg.inboxReqs = 50_000, 10_000, 30
		cfg.pruneN = 100_000
	} else {
		cfg.dur, cfg.burnN, cfg.claimLow, cfg.claimHi, cfg.latN = 10*time.Second, 100_000, 10_000, 10_000_000, 200
		cfg.inboxN, cfg.searchN, cfg.inboxReqs = 1_000_000, 100_000, 50
		cfg.pruneN = 1_000_000
	}
	if claimHi > 0 {
		cfg.claimHi = claimHi
	}
	if pruneN > 0 {
		cfg.pruneN = pruneN
	}
	if err := run(&cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(cfg *config) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "form_outbox_bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg.tmp = tmp
	r := &report{cfg: cfg, started: time.Now(), loadStart: loadAverage()}
	r.machine = describeMachine(ctx, cfg.dsn)
	logf("machine: %s", strings.ReplaceAll(r.machine, "\n", "; "))

	if cfg.runs("intake") || cfg.runs("e2e") || cfg.runs("uploads") || cfg.runs("prune") || cfg.runs("idle") {
		logf("building caddy from ../cmd/caddy")
		cfg.caddyBin = filepath.Join(tmp, "caddy")
		if err := buildCaddy(cfg.caddyBin); err != nil {
			return err
		}
	}

	parts := []struct {
		name, what string
		fn         func(context.Context, *config, *report) error
	}{
		{"intake", "intake", benchIntake},
		{"e2e", "end to end with the worker on", benchE2E},
		{"instr", "instructions per request", benchInstr},
		{"burn", "worker burn-down", benchBurnDown},
		{"c2s", "commit-to-send", benchCommitToSend},
		{"claim", "claim latency", benchClaim},
		{"prune", "retention under load", benchPrune},
		{"inbox", "inbox pages", benchInbox},
		{"uploads", "uploads", benchUploads},
		{"idle", "idle instance", benchIdle},
	}
	for _, p := range parts {
		if !cfg.runs(p.name) {
			continue
		}
		if err := p.fn(ctx, cfg, r); err != nil {
			r.fail(p.what, err)
		}
	}
	r.finished = time.Now()
	r.loadAfter = loadAverage()
	md := r.markdown()
	if len(cfg.only) == 1 && cfg.only["inbox"] {
		// The inbox part alone updates its figures in the last full report rather
		// than replacing that report with a page of inbox figures.
		if old, err := os.ReadFile(cfg.out); err == nil {
			if spliced, ok := r.spliceInbox(string(old)); ok {
				md = spliced
			}
		}
	}
	fmt.Println(md)
	if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
		return err
	}
	logf("wrote %s", cfg.out)
	// Fail loudly: every target not met, and every part that failed, makes the run fail.
	bad := unmet(md)
	for _, f := range r.failures {
		bad = append(bad, "FAILED: "+f)
	}
	for _, l := range bad {
		fmt.Fprintln(os.Stderr, l)
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d targets unmet or parts failed (UNMET)", len(bad))
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}
