package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// spoolLockCaddyfile is a SQLite Caddy whose spool lives in a directory given by the
// test, so that two instances (with their own data directories) can be pointed at one.
const spoolLockCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/outbox.db
		spool %s
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		notify webhook http://127.0.0.1:9/hook
	}
}
`

// A second Caddy pointed at a spool directory another one is using refuses to start,
// naming the holder, rather than appending to the same segments; once the holder is
// killed (-9: no cleanup runs) the directory is free.
func TestSecondCaddyOnOneSpoolDirectoryRefusesToStart(t *testing.T) {
	t.Parallel()
	spoolDir := filepath.Join(t.TempDir(), "shared-spool")
	cf := fmt.Sprintf(spoolLockCaddyfile, spoolDir)
	a := newCaddy(t, caddyOpts{Caddyfile: cf})

	dirB := t.TempDir()
	cfB := strings.NewReplacer("{{HTTP}}", fmt.Sprint(freePort(t)), "{{ADMIN}}", fmt.Sprint(freePort(t)), "{{DIR}}", dirB).Replace(cf)
	pathB := filepath.Join(dirB, "Caddyfile")
	if err := os.WriteFile(pathB, []byte(cfB), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, caddyBin, "run", "--config", pathB, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dirB, "XDG_DATA_HOME="+filepath.Join(dirB, "data"), "XDG_CONFIG_HOME="+filepath.Join(dirB, "config"))
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("second Caddy on the same spool directory: err %v (context %v), want it to exit with an error:\n%s", err, ctx.Err(), out)
	}
	want := fmt.Sprintf("spool directory %s is in use by process %d", spoolDir, a.cmd.Process.Pid)
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "give each Caddy instance its own spool directory") {
		t.Fatalf("second Caddy's output lacks %q and the advice:\n%s", want, out)
	}

	a.Kill()
	b := newCaddy(t, caddyOpts{Caddyfile: cf, Dir: dirB})
	if resp, answer := postJSON(t, b, `{"message":"after the holder died"}`, nil); resp.StatusCode != 200 || answer["id"] == nil {
		t.Fatalf("post to the Caddy that took the spool over: %d %v", resp.StatusCode, answer)
	}
}

// `caddy validate` and `caddy adapt --validate` provision the config without starting it,
// so they must pass next to a running Caddy that holds the spool directory's lock: an
// operator checks the config they are about to reload into that very Caddy.
func TestValidateAndAdaptSucceedWhileCaddyRuns(t *testing.T) {
	t.Parallel()
	spoolDir := filepath.Join(t.TempDir(), "shared-spool")
	a := newCaddy(t, caddyOpts{Caddyfile: fmt.Sprintf(spoolLockCaddyfile, spoolDir)})
	for _, args := range [][]string{
		{"validate", "--config", a.config, "--adapter", "caddyfile"},
		{"adapt", "--config", a.config, "--adapter", "caddyfile", "--validate"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, caddyBin, args...)
		cmd.Dir = a.dir
		cmd.Env = append(os.Environ(), "HOME="+a.dir, "XDG_DATA_HOME="+filepath.Join(a.dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(a.dir, "config"))
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("caddy %s next to the running Caddy: %v\n%s", args[0], err, out)
		}
	}
	// The running Caddy still owns its spool: posting works after both commands ran.
	if resp, answer := postJSON(t, a, `{"message":"after validate"}`, nil); resp.StatusCode != 200 || answer["id"] == nil {
		t.Fatalf("post after validate: %d %v", resp.StatusCode, answer)
	}
}
