-- The store's own bookkeeping: the database clock (clock.go), wake-ups (notify.go) and
-- the migration runner (migrate.go). Statements that name an identifier (CREATE SCHEMA,
-- LISTEN) are built in Go, where pgx.Identifier quotes it.

-- name: DatabaseNow
-- clock_timestamp, not now(): now() is the start of the transaction, and this read is
-- its own statement.
SELECT clock_timestamp()

-- name: Notify
SELECT pg_notify($1, '')

-- name: MigrationLock
SELECT pg_advisory_xact_lock($1)

-- name: SchemaExists
SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)

-- name: CreateMigrationsTable
CREATE TABLE IF NOT EXISTS form_outbox_migrations (
		version integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now()
	)

-- name: AppliedMigrations
SELECT version FROM form_outbox_migrations

-- name: RecordMigration
INSERT INTO form_outbox_migrations (version) VALUES ($1)

-- name: MigrationLevel
SELECT coalesce(max(version), 0) FROM form_outbox_migrations
