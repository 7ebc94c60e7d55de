package formoutbox

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
)

// Storage drivers.
const (
	DriverSQLite   = sqlitestore.Name
	DriverPostgres = pgstore.Name
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

// storeOpenTimeout bounds opening a store (connect + migrations) at provision time, so a
// dead database fails the config load instead of hanging it.
const storeOpenTimeout = 30 * time.Second

// stores shares open stores across config reloads: Caddy provisions the new config while
// the old one still runs, and SQLite allows one writer per file, so both Apps must use the
// same handle. The key holds the DSN, which is a secret: it never leaves this map.
var stores = caddy.NewUsagePool()

// pooledStore closes the store when the last App using it is cleaned up.
type pooledStore struct{ outbox.Store }

func (p pooledStore) Destruct() error { return p.Store.Close() }

// resolvedStorage is a StorageConfig with defaults applied and placeholders replaced.
func resolvedStorage(sc *StorageConfig) (StorageConfig, error) {
	var out StorageConfig
	if sc != nil {
		out = *sc
	}
	repl := caddy.NewReplacer()
	if out.Driver == "" {
		out.Driver = DriverSQLite
	}
	switch out.Driver {
	case DriverSQLite:
		if out.DSN != "" || out.Schema != "" {
			return out, fmt.Errorf("storage sqlite: dsn and schema are PostgreSQL options")
		}
		out.Path = repl.ReplaceKnown(out.Path, "")
		if out.Path == "" {
			out.Path = filepath.Join(caddy.AppDataDir(), AppName, "outbox.db")
		}
		abs, err := caddy.FastAbs(out.Path)
		if err != nil {
			return out, fmt.Errorf("storage sqlite: path %q: %w", out.Path, err)
		}
		out.Path = abs
	case DriverPostgres:
		if out.Path != "" {
			return out, fmt.Errorf("storage postgres: path is a SQLite option; use dsn")
		}
		out.DSN = repl.ReplaceKnown(out.DSN, "")
		if out.DSN == "" {
			// Say which placeholder, not its value: an empty {env.X} is the usual cause.
			return out, fmt.Errorf("storage postgres: the DSN is empty (is the environment variable in %q set?)", sc.DSN)
		}
		out.Schema = repl.ReplaceKnown(out.Schema, "")
	default:
		return out, fmt.Errorf("storage: unknown driver %q (want sqlite or postgres)", out.Driver)
	}
	return out, nil
}

// poolKey identifies one database; Apps configured with the same key share one store.
func (sc StorageConfig) poolKey() string {
	if sc.Driver == DriverSQLite {
		return "sqlite\x00" + sc.Path
	}
	return "postgres\x00" + sc.DSN + "\x00" + sc.Schema
}

// describe names the database for logs without revealing the DSN.
func (sc StorageConfig) describe() string {
	if sc.Driver == DriverSQLite {
		return "sqlite " + sc.Path
	}
	if sc.Schema != "" {
		return "postgres (schema " + sc.Schema + ")"
	}
	return "postgres"
}

// loadStore opens the configured store or shares the one already open. The caller must
// release it with stores.Delete(sc.poolKey()) exactly once.
func loadStore(sc StorageConfig) (outbox.Store, error) {
	val, _, err := stores.LoadOrNew(sc.poolKey(), func() (caddy.Destructor, error) {
		// Not the config's context: the store outlives this config when a reload shares it.
		ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
		defer cancel()
		switch sc.Driver {
		case DriverSQLite:
			s, err := sqlitestore.Open(ctx, sc.Path)
			if err != nil {
				return nil, fmt.Errorf("open sqlite store %s: %w", sc.Path, err)
			}
			return pooledStore{s}, nil
		default:
			// Lazy: Caddy must start (and spool) while PostgreSQL is down; the schema is
			// migrated on the first connection that succeeds.
			s, err := pgstore.Open(ctx, pgstore.Config{DSN: sc.DSN, Schema: sc.Schema, Lazy: true})
			if err != nil {
				// pgx errors may quote the connection string's host and user, never the
				// password; still, keep the DSN itself out of the message.
				return nil, fmt.Errorf("open postgres store: %w", err)
			}
			return pooledStore{s}, nil
		}
	})
	if err != nil {
		return nil, err
	}
	return val.(pooledStore).Store, nil
}

// startupPingTimeout bounds the connection check Start runs in the background.
const startupPingTimeout = 10 * time.Second

// connectionExplainer is a store that can say why it cannot connect (outbox/pgstore's
// explain.go): refused, wrong host, wrong credentials, missing database.
type connectionExplainer interface{ Explain(error) string }

// storageError is err as the operator needs it: the store's diagnosis where it has one.
// pgx errors name host, user and database, never the password, so the plain error is
// safe to show too.
func (a *App) storageError(err error) string {
	if e, ok := a.store.(connectionExplainer); ok {
		if why := e.Explain(err); why != "" {
			return why
		}
	}
	return err.Error()
}

// checkStorageAtStart tries PostgreSQL once, in the background, and logs one warning with
// the cause if it does not answer. The store is opened lazily (loadStore) so that Caddy
// starts and spools while the database is down; without this check a wrong DSN would
// show only as the worker's repeated errors. Health answers 503 until the store connects.
func (a *App) checkStorageAtStart() {
	if a.storage.Driver != DriverPostgres {
		return
	}
	ctx, store := a.ctx, a.store
	go func() {
		pctx, cancel := context.WithTimeout(ctx, startupPingTimeout)
		defer cancel()
		err := store.Ping(pctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		a.logger.Warn("PostgreSQL is not reachable at start-up; submissions go to the spool (503 with the spool off) and health answers 503 until it connects",
			zap.String("storage", a.storage.describe()),
			zap.String("cause", a.storageError(err)))
	}()
}
