package spool

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Spooled submissions are visitors' data waiting for the database: the directories the
// spool creates and every file in them are for the owning process's user only.
func TestSpoolFilesAreOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "spool")
	s := openSpool(t, dir, Options{})
	appendN(t, s, 2)
	if _, err := s.keepAside(1, []byte("torn bytes"), badRange{Off: 0, End: 4}); err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{filepath.Dir(dir): 0o700}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			want[path] = 0o700
		} else {
			want[path] = 0o600
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 5 { // a, spool, LOCK, a segment, corrupt/ and its file
		t.Fatalf("found only %v: the walk missed the spool's files", want)
	}
	for path, mode := range want {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s has mode %v, want %v", path, got, mode)
		}
	}
}
