package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/internal/prereq"
)

// postfixBin is Debian's postfix command (package postfix).
const postfixBin = "/usr/sbin/postfix"

// startPostfix starts a private Postfix instance (its own config, queue and data
// directories, smtpd on a free loopback port, relaying nothing) and returns its
// address; it is stopped and removed at cleanup. It needs root, as Postfix's master
// does. The data directory is under /var/lib: under /tmp, master cannot create its lock
// file (the kernel's protected_regular rule for sticky directories).
func startPostfix(t *testing.T) string {
	t.Helper()
	needRoot(t, "a private Postfix instance (its master runs as root)")
	if _, err := os.Stat(postfixBin); err != nil {
		prereq.Missing(t, "Postfix (apt-get install postfix), for an SMTP server that is not a fake")
	}
	dir, err := os.MkdirTemp("/var/lib", "form-outbox-postfix-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // Postfix's daemons run as postfix
		t.Fatal(err)
	}
	conf, queue, data := filepath.Join(dir, "etc"), filepath.Join(dir, "queue"), filepath.Join(dir, "data")
	for _, d := range []string{conf, queue, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("chown", "postfix:postfix", data).CombinedOutput(); err != nil {
		t.Fatalf("chown the data directory: %v\n%s", err, out)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	master, err := os.ReadFile("/etc/postfix/master.cf")
	if err != nil {
		t.Fatal(err)
	}
	// Debian's master.cf with its smtpd moved from port 25 to ours.
	smtpd := regexp.MustCompile(`(?m)^smtp(\s+inet\s)`)
	if !smtpd.Match(master) {
		t.Fatalf("/etc/postfix/master.cf has no smtp inet service to move")
	}
	master = smtpd.ReplaceAll(master, []byte(addr+"$1"))
	mainCF := strings.Join([]string{
		"compatibility_level = 3.6",
		"queue_directory = " + queue,
		"data_directory = " + data,
		"mail_owner = postfix",
		"inet_interfaces = 127.0.0.1",
		"inet_protocols = ipv4",
		"myhostname = relay.test",
		"mydomain = relay.test",
		"myorigin = relay.test",
		"mydestination =",
		"smtpd_banner = $myhostname ESMTP",
		"smtpd_relay_restrictions = reject",
		"maillog_file = " + filepath.Join(dir, "maillog"),
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(conf, "master.cf"), master, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "main.cf"), []byte(mainCF), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(postfixBin, "-c", conf, "start").CombinedOutput(); err != nil {
		t.Fatalf("postfix start: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(postfixBin, "-c", conf, "stop").Run() })
	// Ready when smtpd greets (master answers the port at once; the banner comes once
	// smtpd has started).
	if err := waitFor(30*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		return err == nil && strings.HasPrefix(line, "220 ")
	}); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "maillog"))
		t.Fatalf("postfix did not greet on %s: %v\n%s", addr, err, log)
	}
	return addr
}

// TestCheckCommandAgainstPostfix: `form-outbox check` against a real Postfix: plain SMTP
// on loopback (tls none) is ready after EHLO and QUIT, and nothing is queued; the
// default, STARTTLS required, is refused with the reason, since this Postfix offers no
// TLS.
func TestCheckCommandAgainstPostfix(t *testing.T) {
	t.Parallel()
	addr := startPostfix(t)
	dir := t.TempDir()
	cf := func(tls string) string {
		return strings.ReplaceAll(`{
	admin off
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		email {
			from "Forms <forms@example.com>"
			smtp {
				address `+addr+`
				tls `+tls+`
			}
		}
	}
}
:0 {
	form_outbox /contact {
		notify email sales@example.com
	}
}
`, "{{DIR}}", dir)
	}
	out, ok := checkRun(t, dir, cf("none"))
	if !ok || !strings.Contains(out, "form contact route email: ready\n") {
		t.Fatalf("check with tls none: ok=%v\n%s", ok, out)
	}
	out, ok = checkRun(t, dir, cf("starttls"))
	if ok || !strings.Contains(out, "form contact route email: e-mail provider smtp: ") || !strings.Contains(out, "does not offer STARTTLS") {
		t.Fatalf("check with starttls: ok=%v\n%s", ok, out)
	}
}
