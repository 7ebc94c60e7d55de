package formoutbox

import (
	"fmt"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/internal/keyfile"
)

// ipHashKeyFile is the key that turns client IPs into stored keyed hashes. It lives in
// Caddy's data dir so that hashes stay comparable across restarts and reloads (a per-process
// random key would make "same client" unanswerable after every restart). Instances that
// share a PostgreSQL database but not a data dir hash differently; copy the file to make
// them agree.
const ipHashKeyFile = "ip_hash.key"

const ipHashKeyBytes = 32

// loadIPHashKey reads or creates the key in Caddy's data dir (internal/keyfile).
func loadIPHashKey() ([]byte, error) {
	key, err := keyfile.LoadOrCreate(filepath.Join(caddy.AppDataDir(), AppName, ipHashKeyFile), ipHashKeyBytes)
	if err != nil {
		return nil, fmt.Errorf("ip hash key: %w", err)
	}
	return key, nil
}
