//go:build unix

package spool

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// One process owns a spool directory: a second Open fails with a message naming the
// holder, and the directory is free again after Close.
func TestOpenLocksTheDirectory(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "in use by process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Open: err = %v, want in use by process %d", err, os.Getpid())
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrInUse) {
		t.Fatalf("second Open: err = %v, want ErrInUse", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

// A process that dies holding the lock (kill -9) leaves the directory free: the kernel
// drops a flock with its holder.
func TestLockDiesWithItsProcess(t *testing.T) {
	if dir := os.Getenv("SPOOL_LOCK_HELPER_DIR"); dir != "" {
		if _, err := Open(dir, Options{}); err != nil {
			fmt.Println("open failed:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		// Hold the lock until killed; a parent that dies first closes our stdin.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestLockDiesWithItsProcess$")
	cmd.Env = append(os.Environ(), "SPOOL_LOCK_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe() // kept open: the helper holds the lock until killed
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper: %q", line)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "in use by process "+strconv.Itoa(cmd.Process.Pid)) {
		t.Fatalf("Open while the helper holds it: err = %v, want in use by process %d", err, cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open after the holder was killed: %v", err)
	}
	s.Close()
}
