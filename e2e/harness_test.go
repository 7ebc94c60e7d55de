package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// caddyBin is the cmd/caddy binary built once by TestMain for every test in this package.
var caddyBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "form_outbox_e2e_bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		os.Exit(1)
	}
	caddyBin = filepath.Join(dir, "caddy")
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	build := exec.Command("go", "build", "-o", caddyBin, "./cmd/caddy")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building cmd/caddy failed:", err)
		os.Exit(1)
	}
	// Most of an e2e test is waiting (on a Caddy process, a retry, a timeout), so more
	// of them run at once than there are cores, unless -parallel says otherwise.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", strconv.Itoa(max(4, runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the module")
	}
	return filepath.Dir(gomod), nil
}

// handedOut holds every port freePort returned in this process. The tests run in
// parallel, and a port is free only until its user binds it (a Caddy starting, a
// PostgreSQL cluster restarted on the port it had): the kernel may offer a port handed
// out a moment ago to the next listener, so freePort never returns one twice.
var handedOut struct {
	mu    sync.Mutex
	ports map[int]bool
}

// freePort returns a loopback TCP port that was free a moment ago and that no other
// caller in this process got.
func freePort(t testing.TB) int {
	t.Helper()
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[port] {
			if handedOut.ports == nil {
				handedOut.ports = map[int]bool{}
			}
			handedOut.ports[port] = true
			return port
		}
	}
}

// caddyProc is one running Caddy process with its own data directory and ports.
type caddyProc struct {
	t         testing.TB
	dir       string // home of this instance: Caddyfile, data dir, logs
	config    string
	env       []string
	HTTPPort  int
	AdminPort int

	mu   sync.Mutex
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

// caddyOpts configure newCaddy. Caddyfile may use {{HTTP}}, {{ADMIN}} and {{DIR}}, which
// are replaced by the instance's HTTP port, admin port and directory.
type caddyOpts struct {
	Caddyfile string
	Dir       string // reuse a directory (restart after kill); "" = new temp dir
	Env       []string
	HTTPPort  int // 0 = pick a free one
	AdminPort int
}

func newCaddy(t testing.TB, o caddyOpts) *caddyProc {
	t.Helper()
	p := &caddyProc{t: t, dir: o.Dir, env: o.Env, HTTPPort: o.HTTPPort, AdminPort: o.AdminPort}
	if p.dir == "" {
		p.dir = t.TempDir()
	}
	if p.HTTPPort == 0 {
		p.HTTPPort = freePort(t)
	}
	if p.AdminPort == 0 {
		p.AdminPort = freePort(t)
	}
	cf := strings.NewReplacer(
		"{{HTTP}}", fmt.Sprint(p.HTTPPort),
		"{{ADMIN}}", fmt.Sprint(p.AdminPort),
		"{{DIR}}", p.dir,
	).Replace(o.Caddyfile)
	p.config = filepath.Join(p.dir, "Caddyfile")
	if err := os.WriteFile(p.config, []byte(cf), 0o644); err != nil {
		t.Fatalf("write Caddyfile: %v", err)
	}
	p.start()
	t.Cleanup(p.Kill)
	return p
}

func (p *caddyProc) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.Command(caddyBin, "run", "--config", p.config, "--adapter", "caddyfile")
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(),
		"HOME="+p.dir,
		"XDG_DATA_HOME="+filepath.Join(p.dir, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(p.dir, "config"),
	)
	cmd.Env = append(cmd.Env, p.env...)
	p.log = &bytes.Buffer{}
	cmd.Stdout = &lockedWriter{w: p.log, mu: &p.mu}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start caddy: %v", err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	done := p.done
	go func() { cmd.Wait(); close(done) }()
	p.mu.Unlock()
	err := waitFor(20*time.Second, func() bool {
		select {
		case <-done:
			return true
		default:
		}
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.HTTPPort), 200*time.Millisecond)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	p.mu.Lock()
	select {
	case <-done:
		p.t.Fatalf("caddy exited at start:\n%s", p.log.String())
	default:
	}
	if err != nil {
		p.t.Fatalf("caddy did not listen on %d: %v\n%s", p.HTTPPort, err, p.log.String())
	}
}

// Kill sends SIGKILL: no shutdown code runs, as in a power cut or OOM kill.
func (p *caddyProc) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Stop asks Caddy to shut down gracefully (SIGINT) and waits.
func (p *caddyProc) Stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.t.Errorf("caddy did not stop within 30s after SIGINT")
		p.Kill()
	}
}

// Restart starts the process again with the same directory, ports and config.
func (p *caddyProc) Restart() { p.start() }

// Log returns what the process printed so far.
func (p *caddyProc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Reload posts a new Caddyfile through `caddy reload` (the admin API), as an operator would.
func (p *caddyProc) Reload(caddyfile string) {
	p.t.Helper()
	cf := strings.NewReplacer(
		"{{HTTP}}", fmt.Sprint(p.HTTPPort),
		"{{ADMIN}}", fmt.Sprint(p.AdminPort),
		"{{DIR}}", p.dir,
	).Replace(caddyfile)
	if err := os.WriteFile(p.config, []byte(cf), 0o644); err != nil {
		p.t.Fatalf("write Caddyfile: %v", err)
	}
	cmd := exec.Command(caddyBin, "reload", "--config", p.config, "--adapter", "caddyfile",
		"--address", fmt.Sprintf("127.0.0.1:%d", p.AdminPort))
	cmd.Dir = p.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("caddy reload: %v\n%s", err, out)
	}
}

func (p *caddyProc) URL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", p.HTTPPort, path)
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// waitFor polls cond every 20ms until it holds or the timeout passes.
func waitFor(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met within %s", timeout)
		}
		<-tick.C
	}
}

// noRedirect is an HTTP client that shows us the 303 instead of following it.
var noRedirect = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// keyedJSONPost is a JSON post of {"message": message} to url that asks for a JSON answer
// and carries key as its Idempotency-Key, as a retrying client sends it.
func keyedJSONPost(ctx context.Context, url, message, key string) *http.Request {
	body, _ := json.Marshal(map[string]string{"message": message})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", key)
	return req
}

func do(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), 30*time.Second)
	defer cancel()
	resp, err := noRedirect.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}
