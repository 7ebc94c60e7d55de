package formoutbox

import (
	"fmt"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/internal/keyfile"
)

// spamKeyFile signs the spam tokens (intake/timetrap.go): like the IP hash key it lives
// in Caddy's data dir, so a token issued before a restart or a reload is still good
// after it. Instances behind one load balancer must share it (copy the file), or a
// token issued by one is judged forged by another.
const spamKeyFile = "spam.key"

// loadSpamKey reads or creates the key in Caddy's data dir (internal/keyfile).
func loadSpamKey() ([]byte, error) {
	key, err := keyfile.LoadOrCreate(filepath.Join(caddy.AppDataDir(), AppName, spamKeyFile), 32)
	if err != nil {
		return nil, fmt.Errorf("spam key: %w", err)
	}
	return key, nil
}
