package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/internal/prereq"
)

// pgCluster is a throwaway PostgreSQL server of one test: initdb into t.TempDir(), pg_ctl
// on a free loopback port. Tests that stop, kill or restart the database use one of these,
// never the shared server. When run as root, the server runs as user postgres.
type pgCluster struct {
	t     testing.TB
	bin   string
	dir   string // data directory
	log   string
	Host  string // the address it listens on: 127.0.0.1 unless in a network namespace
	Port  int
	asPG  bool
	netns string // network namespace the server runs in ("" = this one)
}

// newPGCluster initialises and starts a cluster, stopped (immediate) at cleanup.
func newPGCluster(t testing.TB) *pgCluster {
	t.Helper()
	return newPGClusterIn(t, "", "127.0.0.1")
}

// newPGClusterIn is newPGCluster with the server inside network namespace netns,
// listening on host (an address of that namespace); the drills cut its packets.
func newPGClusterIn(t testing.TB, netns, host string) *pgCluster {
	t.Helper()
	c := preparePGCluster(t, netns, host)
	c.run("initdb", "-D", c.dir, "-U", "postgres", "-A", "trust", "--no-sync")
	if netns != "" {
		// initdb trusts loopback only; the namespace's clients come over its veth, whose
		// /30 is the server's only other directly connected subnet (samenet).
		f, err := os.OpenFile(filepath.Join(c.dir, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("host all all samenet trust\nhost replication all samenet trust\n")
			f.Close()
		}
		if err != nil {
			t.Fatalf("pg_hba.conf: %v", err)
		}
	}
	c.Start()
	return c
}

// newPGReplica makes a streaming replica of primary (pg_basebackup -R) and starts it;
// Promote turns it into a primary.
func newPGReplica(t testing.TB, primary *pgCluster) *pgCluster {
	t.Helper()
	c := preparePGCluster(t, "", "127.0.0.1")
	c.run("pg_basebackup", "-D", c.dir, "-R", "-X", "stream", "-c", "fast",
		"-h", primary.Host, "-p", strconv.Itoa(primary.Port), "-U", "postgres")
	c.Start()
	return c
}

// Promote ends recovery on a replica and waits until it takes writes.
func (c *pgCluster) Promote() {
	c.t.Helper()
	c.pgctl("promote", "-w", "-t", "60")
}

// preparePGCluster picks the binaries, directory and port of a cluster not yet created,
// and registers its stop at cleanup.
func preparePGCluster(t testing.TB, netns, host string) *pgCluster {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(dirs) == 0 {
		prereq.Missing(t, "PostgreSQL's server binaries under /usr/lib/postgresql/*/bin, for a throwaway cluster (apt-get install postgresql)")
	}
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) < pgVersion(dirs[j]) })
	root := t.TempDir()
	c := &pgCluster{t: t, bin: dirs[len(dirs)-1], dir: filepath.Join(root, "data"), log: filepath.Join(root, "log"),
		Host: host, Port: freePort(t), asPG: os.Geteuid() == 0, netns: netns}
	if c.asPG {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatalf("chown cluster dir: %v", err)
		}
		// t.TempDir's parent is 0700 root: let postgres through to its own directory.
		for d := filepath.Dir(root); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
			os.Chmod(d, 0o755)
		}
	}
	t.Cleanup(func() {
		if c.running() {
			c.pgctl("stop", "-m", "immediate")
		}
	})
	return c
}

func pgVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// DSN is the cluster's connection string (database postgres, trust auth).
func (c *pgCluster) DSN() string {
	return fmt.Sprintf("postgres://postgres@%s:%d/postgres?sslmode=disable", c.Host, c.Port)
}

// Start starts the server and waits until it accepts connections.
func (c *pgCluster) Start() {
	c.t.Helper()
	c.pgctl("start", "-w", "-t", "60", "-l", c.log,
		"-o", fmt.Sprintf("-p %d -c listen_addresses=%s -k %s -c fsync=off", c.Port, c.Host, filepath.Dir(c.dir)))
	if err := waitFor(30*time.Second, c.accepts); err != nil {
		c.t.Fatalf("PostgreSQL did not accept connections: %v", err)
	}
}

// Stop shuts the server down (fast mode: sessions are cut, as in a failover).
func (c *pgCluster) Stop() {
	c.t.Helper()
	c.pgctl("stop", "-w", "-m", "fast")
}

// Kill sends SIGKILL to the postmaster, as in a crash; Start recovers.
func (c *pgCluster) Kill() {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "postmaster.pid"))
	if err != nil {
		c.t.Fatalf("read postmaster.pid: %v", err)
	}
	var pid int
	fmt.Sscanf(string(b), "%d", &pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		c.t.Fatalf("kill postmaster: %v", err)
	}
	waitFor(30*time.Second, func() bool { return syscall.Kill(pid, 0) != nil })
}

func (c *pgCluster) running() bool {
	return exec.Command(filepath.Join(c.bin, "pg_ctl"), "status", "-D", c.dir).Run() == nil ||
		c.asPG && exec.Command("runuser", "-u", "postgres", "--", filepath.Join(c.bin, "pg_ctl"), "status", "-D", c.dir).Run() == nil
}

func (c *pgCluster) accepts() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		return false
	}
	conn.Close(ctx)
	return true
}

func (c *pgCluster) pgctl(args ...string) {
	c.t.Helper()
	c.run("pg_ctl", append([]string{"-D", c.dir}, args...)...)
}

func (c *pgCluster) run(tool string, args ...string) {
	c.t.Helper()
	name, argv := filepath.Join(c.bin, tool), args
	if c.asPG {
		name, argv = "runuser", append([]string{"-u", "postgres", "--", filepath.Join(c.bin, tool)}, args...)
	}
	if c.netns != "" {
		name, argv = "ip", append([]string{"netns", "exec", c.netns, name}, argv...)
	}
	cmd := exec.Command(name, argv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(c.log)
		c.t.Fatalf("%s %v: %v\n%s\n%s", tool, args, err, out, log)
	}
}
