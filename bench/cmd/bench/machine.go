package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/jackc/pgx/v5"
)

// describeMachine says what the numbers were measured on.
func describeMachine(ctx context.Context, dsn string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- CPU: %d cores (%s), %s/%s, %s\n", runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "- Memory: %s\n", memTotal())
	fmt.Fprintf(&b, "- Load average at start: %s\n", loadAverage())
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		fmt.Fprintf(&b, "- PostgreSQL: unreachable (%v)\n", err)
		return b.String()
	}
	defer conn.Close(ctx)
	var version string
	_ = conn.QueryRow(ctx, `SHOW server_version`).Scan(&version)
	fmt.Fprintf(&b, "- PostgreSQL %s on 127.0.0.1 (TCP), settings:", version)
	for _, s := range []string{"synchronous_commit", "fsync", "wal_sync_method", "full_page_writes", "commit_delay", "shared_buffers", "max_connections", "wal_level"} {
		var v string
		if err := conn.QueryRow(ctx, `SELECT current_setting($1)`, s).Scan(&v); err == nil {
			fmt.Fprintf(&b, " %s=%s", s, v)
		}
	}
	b.WriteString("\n")
	return b.String()
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "MemTotal:"))
		}
	}
	return "unknown"
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func buildCaddy(out string) error {
	cmd := exec.Command("go", "build", "-o", out, "./cmd/caddy")
	cmd.Dir = ".."
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build caddy: %w", err)
	}
	return nil
}
