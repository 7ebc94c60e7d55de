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
}

// Write stores r as dir/<drill>.json.
func (r Result) Write(dir string) error {
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
}

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
	b.WriteString("Generated by `scripts/drills` (do not edit by hand): it runs every `TestDrill*` of e2e/ " +
		"against the built Caddy and real PostgreSQL clusters, then assembles this page from their figures. " +
		"Every drill fails unless 0 acknowledged submissions are lost, 0 are duplicated, and duplicate sends " +
		"stay within the ambiguous attempts (sends whose outcome nobody could record).\n\n")
	fmt.Fprintf(&b, "Machine: %s.  \nDate: %s.\n\n", mach, now.Format("2006-01-02 15:04 UTC"))
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
		if r.Notes != "" {
			fmt.Fprintf(&b, "This run: %s.\n", strings.TrimSuffix(r.Notes, "."))
		}
	}
	return b.String()
}
