// Package storage turns the storage settings (`storage sqlite [PATH]`, `storage postgres
// DSN`) into an open outbox.Store. The root package shares the stores it opens across
// config reloads (storage.go there); choosing, checking and opening the store is here,
// where it tests without Caddy.
package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
)

// Drivers.
const (
	DriverSQLite   = sqlitestore.Name
	DriverPostgres = pgstore.Name
)

// OpenTimeout bounds opening a store (connect + migrations) at provision time, so a dead
// database fails the config load instead of hanging it.
const OpenTimeout = 30 * time.Second

// startupPingTimeout bounds the connection check WarnIfUnreachable runs.
const startupPingTimeout = 10 * time.Second

// Config names one database. The DSN is a secret: it never reaches a log or an error.
type Config struct {
	Driver string // DriverSQLite or DriverPostgres
	Path   string // the SQLite file
	DSN    string // the PostgreSQL connection string
	Schema string // the PostgreSQL schema holding the tables, created if missing
}

// Resolve applies defaults to what the user configured and checks it: replace resolves
// placeholders such as {env.DATABASE_URL} (the caller's), and defaultPath is the SQLite
// file used when none is given. Errors name the configured text, never a resolved DSN.
func Resolve(raw Config, replace func(string) string, defaultPath string) (Config, error) {
	out := raw
	if out.Driver == "" {
		out.Driver = DriverSQLite
	}
	switch out.Driver {
	case DriverSQLite:
		if out.DSN != "" || out.Schema != "" {
			return out, fmt.Errorf("storage sqlite: dsn and schema are PostgreSQL options")
		}
		out.Path = replace(out.Path)
		if out.Path == "" {
			out.Path = defaultPath
		}
		abs, err := filepath.Abs(out.Path)
		if err != nil {
			return out, fmt.Errorf("storage sqlite: path %q: %w", out.Path, err)
		}
		out.Path = abs
	case DriverPostgres:
		if out.Path != "" {
			return out, fmt.Errorf("storage postgres: path is a SQLite option; use dsn")
		}
		out.DSN = replace(out.DSN)
		if out.DSN == "" {
			// Say which placeholder, not its value: an empty {env.X} is the usual cause.
			return out, fmt.Errorf("storage postgres: the DSN is empty (is the environment variable in %q set?)", raw.DSN)
		}
		out.Schema = replace(out.Schema)
	default:
		return out, fmt.Errorf("storage: unknown driver %q (want sqlite or postgres)", out.Driver)
	}
	return out, nil
}

// PoolKey identifies one database: configs with the same key must share one store. It
// holds the DSN, so it is for map keys only.
func (c Config) PoolKey() string {
	if c.Driver == DriverSQLite {
		return "sqlite\x00" + c.Path
	}
	return "postgres\x00" + c.DSN + "\x00" + c.Schema
}

// Describe names the database for logs without revealing the DSN.
func (c Config) Describe() string {
	if c.Driver == DriverSQLite {
		return "sqlite " + c.Path
	}
	if c.Schema != "" {
		return "postgres (schema " + c.Schema + ")"
	}
	return "postgres"
}

// Open opens the store c names, within OpenTimeout. It takes no caller's context on
// purpose: the root package shares a store across config reloads, so the store outlives
// the config that opened it.
func Open(c Config) (outbox.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), OpenTimeout)
	defer cancel()
	if c.Driver == DriverSQLite {
		s, err := sqlitestore.Open(ctx, c.Path)
		if err != nil {
			return nil, fmt.Errorf("open sqlite store %s: %w", c.Path, err)
		}
		return s, nil
	}
	// Lazy: Caddy must start (and spool) while PostgreSQL is down; the schema is
	// migrated on the first connection that succeeds.
	s, err := pgstore.Open(ctx, pgstore.Config{DSN: c.DSN, Schema: c.Schema, Lazy: true})
	if err != nil {
		// pgx errors may quote the connection string's host and user, never the
		// password; still, keep the DSN itself out of the message.
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	return s, nil
}

// connectionExplainer is a store that can say why it cannot connect (outbox/pgstore's
// explain.go): refused, wrong host, wrong credentials, missing database.
type connectionExplainer interface{ Explain(error) string }

// Explain is err as the operator needs it: the store's diagnosis where it has one. pgx
// errors name host, user and database, never the password, so the plain error is safe
// to show too.
func Explain(store outbox.Store, err error) string {
	if e, ok := store.(connectionExplainer); ok {
		if why := e.Explain(err); why != "" {
			return why
		}
	}
	return err.Error()
}

// WarnIfUnreachable tries PostgreSQL once, in the background, and logs one warning with
// the cause if it does not answer; it returns at once. Open connects lazily so that
// Caddy starts and spools while the database is down; without this check a wrong DSN
// would show only as the worker's repeated errors. ctx ends the check early (the config
// stopped), and then nothing is logged.
func WarnIfUnreachable(ctx context.Context, store outbox.Store, c Config, logger *zap.Logger) {
	if c.Driver != DriverPostgres {
		return
	}
	go func() {
		pctx, cancel := context.WithTimeout(ctx, startupPingTimeout)
		defer cancel()
		err := store.Ping(pctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		logger.Warn("PostgreSQL is not reachable at start-up; submissions go to the spool (503 with the spool off) and health answers 503 until it connects",
			zap.String("storage", c.Describe()),
			zap.String("cause", Explain(store, err)))
	}()
}
