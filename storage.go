package formoutbox

import (
	"path/filepath"

	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/internal/storage"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Storage drivers.
const (
	DriverSQLite   = storage.DriverSQLite
	DriverPostgres = storage.DriverPostgres
)

// StorageConfig selects the database. The JSON twin of `storage sqlite [PATH]` and
// `storage postgres DSN`.
type StorageConfig struct {
	// Driver is "sqlite" (default) or "postgres".
	Driver string `json:"driver,omitempty"`
	// Path is the SQLite file. Default: <Caddy data dir>/form_outbox/outbox.db.
	Path string `json:"path,omitempty"`
	// DSN is the PostgreSQL connection string. Placeholders such as {env.DATABASE_URL} are
	// resolved at provision time; the value is a secret and never logged.
	DSN string `json:"dsn,omitempty"`
	// Schema, when set, holds the tables in that PostgreSQL schema (created if missing).
	Schema string `json:"schema,omitempty"`
}

// stores shares open stores across config reloads: Caddy provisions the new config while
// the old one still runs, and SQLite allows one writer per file, so both Apps must use the
// same handle. The key holds the DSN, which is a secret: it never leaves this map.
var stores = caddy.NewUsagePool()

// pooledStore closes the store when the last App using it is cleaned up.
type pooledStore struct{ outbox.Store }

func (p pooledStore) Destruct() error { return p.Store.Close() }

// resolvedStorage is a StorageConfig with Caddy's placeholders replaced and defaults
// applied (internal/storage checks it).
func resolvedStorage(sc *StorageConfig) (storage.Config, error) {
	var raw StorageConfig
	if sc != nil {
		raw = *sc
	}
	repl := caddy.NewReplacer()
	return storage.Resolve(storage.Config(raw),
		func(s string) string { return repl.ReplaceKnown(s, "") },
		filepath.Join(caddy.AppDataDir(), AppName, "outbox.db"))
}

// loadStore opens the configured store or shares the one already open. The caller must
// release it with stores.Delete(sc.PoolKey()) exactly once.
func loadStore(sc storage.Config) (outbox.Store, error) {
	val, _, err := stores.LoadOrNew(sc.PoolKey(), func() (caddy.Destructor, error) {
		s, err := storage.Open(sc)
		if err != nil {
			return nil, err
		}
		return pooledStore{s}, nil
	})
	if err != nil {
		return nil, err
	}
	return val.(pooledStore).Store, nil
}

// storageError is err as the operator needs it (internal/storage's Explain).
func (a *App) storageError(err error) string { return storage.Explain(a.store, err) }
