// Package keyfile keeps a random secret key in a hex file: read when it exists, created
// (mode 0600) on first use. The root package keeps the key that hashes client IPs this
// way (iphashkey.go), so stored hashes stay comparable across restarts and reloads.
package keyfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LoadOrCreate reads the hex key at path, creating a random key of size bytes on first
// use. Creation links a fully written temporary file into place, so concurrent first
// starts agree on one key and nobody reads half a file. A file holding fewer than size
// bytes is an error, never replaced: hashes made with it would stop matching.
func LoadOrCreate(path string, size int) ([]byte, error) {
	key, err := read(path, size)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key = make([]byte, size)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*") // mode 0600
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return read(path, size) // another process won the race
		}
		return nil, err
	}
	return key, nil
}

func read(path string, size int) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < size {
		return nil, fmt.Errorf("%s must hold at least %d hex-encoded bytes", path, size)
	}
	return key, nil
}
