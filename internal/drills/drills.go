// Package drills holds the figures the process-level drills (e2e/drill_*_test.go) publish
// and turns them into docs/drills.md (scripts/drills, through scripts/drillsreport).
package drills

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// EnvResults names a directory where each drill writes <drill>.json; scripts/drills
// sets it.
const EnvResults = "FORM_OUTBOX_DRILL_RESULTS"

// Result is one drill's figures: the JSON file <drill>.json a drill writes.
type Result struct {
	Drill                string  `json:"drill"`
	Submissions          int     `json:"submissions"`
	Acknowledged         int     `json:"acknowledged"`
	Lost                 int     `json:"lost"`
	DuplicateSubmissions int     `json:"duplicate_submissions"`
	DuplicateSends       int     `json:"duplicate_sends"`
	AmbiguousAttempts    int     `json:"ambiguous_attempts"`
	RecoverySeconds      float64 `json:"recovery_seconds"`
	Notes                string  `json:"notes"`
	// Ran is when the drill ran (UTC, minutes). The page is assembled from the files of
	// several runs (scripts/drills, scripts/soak), so each row carries its own date.
	Ran string `json:"ran"`
}

// ranFormat is how Result.Ran and the page's dates are written.
const ranFormat = "2006-01-02 15:04 UTC"

// Write stores r as dir/<drill>.json, dated now unless r.Ran is set.
func (r Result) Write(dir string) error {
	if r.Ran == "" {
		r.Ran = time.Now().UTC().Format(ranFormat)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode drill result: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("drill results dir: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, r.Drill+".json"), append(b, '\n'), 0o644)
}

// about says what each drill of e2e/drill_*_test.go does; a drill missing here is
// described by its notes alone.
var about = map[string]string{
	"partition": "PostgreSQL runs in a network namespace of its own, reached over a veth pair on a private /30; " +
		"mid-load every packet between it and Caddy is dropped (nftables) for 25 s, then let through again. " +
		"Posts during the partition must be answered within the accept deadline (queued to the spool), not after TCP timeouts; " +
		"the same Caddy process must store them all and resume deliveries without a restart. " +
		"Recovery: from the heal until posts are stored straight away again and the spool is empty.",
	"failover": "A primary and a synchronous streaming replica (pg_basebackup -R); Caddy uses one DSN naming both hosts " +
		"with target_session_attrs=read-write. Mid-load, with deliveries held in flight, the primary is killed (-9) and the " +
		"replica promoted 5 s later. The leases held on the old primary must be taken over once they expire and delivered. " +
		"Recovery: the window from the kill until posts are stored straight away again and the spool is empty.",
	"disk-full-spool": "The spool directory sits on a 64 KiB tmpfs and PostgreSQL is down, so the spool fills: " +
		"each post is answered queued (fsynced) or 503 with Retry-After, health says \"no space left on device\". " +
		"PostgreSQL comes back, the spool drains, and the spool must take a submission again. " +
		"Recovery: from PostgreSQL's return until posts are stored straight away and the spool is empty.",
	"disk-full-sqlite": "The SQLite database and the spool share a 16 MiB tmpfs that is filled mid-load: " +
		"each post is acknowledged and durable or answered 503 with Retry-After, and health says why. " +
		"After the filler is removed the database must pass integrity_check and every delivery be sent. " +
		"Recovery: from the space returning until posts are stored straight away and the spool is empty.",
	"soak": chaosAbout + " The soak is this run at 100000 submissions (scripts/soak, about 45 minutes; not run in CI), " +
		"so that slow leaks, a growing backlog or a rare race show up as lost, duplicated or unsettled rows.",
	"chaos": chaosAbout + " The chaos row is this run at fewer submissions than the soak's 100000 " +
		"(scripts/soak with FORM_OUTBOX_CHAOS_SUBMISSIONS set lower); CI runs it at 2000 without writing figures.",
}

// chaosAbout describes e2e/chaos_test.go (TestChaosNothingLost), which publishes the soak
// row at 100000 submissions and the chaos row at any smaller size.
const chaosAbout = "One Caddy on its own PostgreSQL takes paced submissions from 16 retrying clients " +
	"(each retries with the same idempotency key until answered 200) while Caddy is killed (-9) and restarted five times, " +
	"PostgreSQL is killed twice for 10-20 s (two of the Caddy kills fall in those outages), the fake SES fails 30% and hangs 5% " +
	"of sends and is unreachable from 35% to 75% of the load (Resend takes over), and the webhook receiver answers 500 " +
	"to 20% of requests. After a bounded drain every answered submission must be stored once and every delivery be sent " +
	"or dead with a reason. Recovery: from the end of the last fault (Caddy answering after the last kill, " +
	"which comes at 90% of the load) until every answered submission is stored and no delivery is left pending; " +
	"it includes posting the last tenth of the load."

// Load reads every *.json of dir, sorted by drill name.
func Load(dir string) ([]Result, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if r.Drill == "" {
			return nil, fmt.Errorf("%s: no drill name", f)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Drill < out[j].Drill })
	return out, nil
}

// Machine describes where the drills ran: CPU model and count, memory, kernel.
func Machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.1f GiB RAM", float64(kb)/(1<<20))
		}
	}
	kernel := runtime.GOOS
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		kernel = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%d × %s%s, %s, %s", runtime.NumCPU(), cpu, mem, kernel, runtime.Version())
}

// Render is docs/drills.md for results, run on mach at now.
func Render(results []Result, mach string, now time.Time) string {
	var b strings.Builder
	b.WriteString("# Drills\n\n")
	b.WriteString("Generated by `scripts/drills` and `scripts/soak` (do not edit by hand): the first runs every `TestDrill*` " +
		"of e2e/, the second the chaos run of e2e/chaos_test.go at 100000 submissions, against the built Caddy and " +
		"real PostgreSQL clusters; each drill's figures are kept in docs/drills/<drill>.json and this page is assembled " +
		"from all of them, so each row is from that drill's latest run. " +
		"Every drill fails unless 0 acknowledged submissions are lost, 0 are duplicated, and duplicate sends " +
		"stay within the ambiguous attempts (sends whose outcome nobody could record).\n\n")
	fmt.Fprintf(&b, "Machine: %s.  \nAssembled: %s.\n\n", mach, now.Format(ranFormat))
	b.WriteString("| Drill | Submissions | Acknowledged | Lost | Duplicate submissions | Duplicate sends | Ambiguous attempts | Recovery (s) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %.1f |\n", r.Drill, r.Submissions, r.Acknowledged,
			r.Lost, r.DuplicateSubmissions, r.DuplicateSends, r.AmbiguousAttempts, r.RecoverySeconds)
	}
	for _, r := range results {
		fmt.Fprintf(&b, "\n## %s\n\n", r.Drill)
		if a := about[r.Drill]; a != "" {
			b.WriteString(a + "\n\n")
		}
		run := "This run"
		if r.Ran != "" {
			run += " (" + r.Ran + ")"
		}
		if r.Notes != "" {
			fmt.Fprintf(&b, "%s: %s.\n", run, strings.TrimSuffix(r.Notes, "."))
		} else if r.Ran != "" {
			fmt.Fprintf(&b, "%s.\n", run)
		}
	}
	return b.String()
}
