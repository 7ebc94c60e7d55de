package keyfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

const keyBytes = 32

// The key is made once, kept private and read back unchanged; a damaged file is refused
// rather than silently replaced.
func TestKeyIsCreatedOnceAndKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "form_outbox", "ip_hash.key")
	first, err := LoadOrCreate(path, keyBytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != keyBytes {
		t.Fatalf("key of %d bytes, want %d", len(first), keyBytes)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode %v, want 0600", perm)
	}
	again, err := LoadOrCreate(path, keyBytes)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, again) {
		t.Error("second load made a new key instead of reading the file")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".ip_hash.key-*")); len(leftovers) != 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}

	if err := os.WriteFile(path, []byte("abcd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(path, keyBytes); err == nil {
		t.Error("a truncated key file was accepted")
	}
}
