//go:build unix

package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockName is the file in a spool directory that its owning process holds an exclusive
// flock on. The kernel drops the lock when the process dies, so a crash never leaves the
// directory locked.
const lockName = "LOCK"

// lockDir takes the directory's lock, or says which process holds it. Two processes
// appending to one spool could interleave records in a segment, and the frame check
// would then set good records aside.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open spool lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := "another process"
		if b, rerr := os.ReadFile(path); rerr == nil && strings.TrimSpace(string(b)) != "" {
			holder = "process " + strings.TrimSpace(string(b))
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("spool directory %s is in use by %s: %w", dir, holder, ErrInUse)
		}
		return nil, fmt.Errorf("lock spool directory %s: %w", dir, err)
	}
	// The holder's pid, for the message above; the lock itself is the flock.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
