package formoutbox

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

// ipHashKeyFile is the key that turns client IPs into stored keyed hashes. It lives in
// Caddy's data dir so that hashes stay comparable across restarts and reloads (a per-process
// random key would make "same client" unanswerable after every restart). Instances that
// share a PostgreSQL database but not a data dir hash differently; copy the file to make
// them agree.
const ipHashKeyFile = "ip_hash.key"

const ipHashKeyBytes = 32

// loadOrCreateKey reads the hex key at path, creating it (0600) on first use. Creation
// links a fully written temporary file into place, so concurrent first starts agree on
// one key and nobody reads half a file.
func loadOrCreateKey(path string) ([]byte, error) {
	key, err := readKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ip hash key: %w", err)
	}
	key = make([]byte, ipHashKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("ip hash key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".ip_hash.key-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("ip hash key: %w", err)
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
		return nil, fmt.Errorf("ip hash key: write %s: %w", tmp.Name(), err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readKey(path) // another process won the race
		}
		return nil, fmt.Errorf("ip hash key: %w", err)
	}
	return key, nil
}

func readKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("ip hash key: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < ipHashKeyBytes {
		return nil, fmt.Errorf("ip hash key: %s must hold at least %d hex-encoded bytes", path, ipHashKeyBytes)
	}
	return key, nil
}
