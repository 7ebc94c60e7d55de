package formoutbox

import (
	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
	"github.com/formoutbox/caddy-form-outbox/internal/storage"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// stores shares open stores across config reloads: Caddy provisions the new config while
// the old one still runs, and SQLite allows one writer per file, so both Apps must use the
// same handle. The key holds the DSN, which is a secret: it never leaves this map.
var stores = caddy.NewUsagePool()

// pooledStore closes the store when the last App using it is cleaned up.
type pooledStore struct{ outbox.Store }

func (p pooledStore) Destruct() error { return p.Store.Close() }

// resolvedStorage is a caddyconf.StorageConfig with Caddy's placeholders replaced and defaults
// applied (internal/storage checks it).
func resolvedStorage(sc *caddyconf.StorageConfig) (storage.Config, error) {
	var raw caddyconf.StorageConfig
	if sc != nil {
		raw = *sc
	}
	repl := caddy.NewReplacer()
	return storage.Resolve(storage.Config(raw),
		func(s string) string { return repl.ReplaceKnown(s, "") },
		caddyconf.DefaultStorePath(caddy.AppDataDir()))
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
