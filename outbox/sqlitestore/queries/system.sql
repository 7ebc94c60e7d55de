-- The migration runner's bookkeeping (migrate.go).

-- name: CreateMigrationsTable
CREATE TABLE IF NOT EXISTS form_outbox_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	) STRICT

-- name: AppliedMigrations
SELECT version FROM form_outbox_migrations

-- name: RecordMigration
INSERT INTO form_outbox_migrations (version, applied_at) VALUES (?, ?)

-- A group commit's item runs inside a savepoint (inSavepoint, accept_batch.go), rolled
-- back to alone when the item fails.

-- name: Savepoint
SAVEPOINT batch_item

-- name: RollbackToSavepoint
ROLLBACK TO batch_item

-- name: ReleaseSavepoint
RELEASE batch_item

-- Each function of the store's shared write transaction runs inside this savepoint
-- (runInSavepoint, combine.go), rolled back to alone when the function fails. A function
-- may nest batch_item savepoints inside it.

-- name: WriteSavepoint
SAVEPOINT write_fn

-- name: WriteRollbackTo
ROLLBACK TO write_fn

-- name: WriteRelease
RELEASE write_fn

-- name: MigrationLevel
SELECT coalesce(max(version), 0) FROM form_outbox_migrations
