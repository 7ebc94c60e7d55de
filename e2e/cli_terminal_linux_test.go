//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: what a program writes to the returned terminal
// side is read from the controller side, as a terminal emulator would.
func openPTY(t *testing.T) (controller, terminal *os.File) {
	t.Helper()
	controller, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { controller.Close() })
	fd := int(controller.Fd())
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	terminal, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty terminal side: %v", err)
	}
	return controller, terminal
}

// cliOnTerminal runs `caddy form-outbox ARGS` with its output on a terminal and returns
// what the terminal received, with the terminal's CRLF line ends made LF again.
func (p *caddyProc) cliOnTerminal(t *testing.T, args ...string) string {
	t.Helper()
	controller, terminal := openPTY(t)
	cmd := exec.Command(caddyBin, append(append([]string{"form-outbox"}, args...), "--address", fmt.Sprintf("127.0.0.1:%d", p.AdminPort))...)
	cmd.Stdout, cmd.Stderr = terminal, terminal
	if err := cmd.Start(); err != nil {
		t.Fatalf("start caddy form-outbox %v: %v", args, err)
	}
	terminal.Close() // the child holds its own copy; the read below ends when it exits
	got := make(chan []byte, 1)
	go func() {
		// Linux answers EIO once the last holder of the terminal side closed it: the end.
		b, _ := io.ReadAll(controller)
		got <- b
	}()
	err := cmd.Wait()
	out := strings.ReplaceAll(string(<-got), "\r\n", "\n")
	if err != nil {
		t.Fatalf("caddy form-outbox %v: %v\n%s", args, err, out)
	}
	return out
}

// An export printed on the operator's terminal shows control characters as escapes,
// in NDJSON (which then still parses to the stored values) and in CSV; the same export
// into a pipe is the exact data (TestCLIEscapesControlCharacters in cli_terminal_test.go).
func TestCLIExportToTerminalEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	hook := newSwitchable(t, http.StatusOK)
	p := newCaddy(t, caddyOpts{Caddyfile: adminConfig("sqlite {{DIR}}/forms.db", hook.srv.URL)})
	postWithHeaders(t, p, "/contact", url.Values{"name": {hostileName}, "message": {hostileMessage}}, nil)

	out := p.cliOnTerminal(t, "export", "--form", "contact")
	assertNoControls(t, "export", out)
	var line submissionJSON
	if err := json.Unmarshal([]byte(out), &line); err != nil {
		t.Fatalf("export on a terminal is not JSON: %v\n%q", err, out)
	}
	if line.Data["name"] != hostileName || line.Data["message"] != hostileMessage {
		t.Errorf("export on a terminal decodes to %q, want the stored values", line.Data)
	}

	out = p.cliOnTerminal(t, "export", "--format", "csv", "--form", "contact")
	assertNoControls(t, "export --format csv", out)
	if !strings.Contains(out, `\u001b]0;pwned\u0007Ada`) || !strings.Contains(out, `\u009b31mred`) {
		t.Errorf("export --format csv on a terminal does not show the escapes:\n%s", out)
	}
}
