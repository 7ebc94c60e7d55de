-- Parked destinations (docs/design.md, "Parked destinations"). A destination that keeps
-- failing is parked: its deliveries wait in status parked, not due, spending no attempt,
-- until a probe gets through or an operator unparks it. The row is the park; unparking
-- deletes it. Keys never hold a secret (outbox/destination.go).
CREATE TABLE destinations (
	key               TEXT PRIMARY KEY,
	channel           TEXT NOT NULL,
	label             TEXT NOT NULL,
	reason            TEXT NOT NULL DEFAULT '',
	manual            INTEGER NOT NULL DEFAULT 0 CHECK (manual IN (0, 1)),
	parked_at         INTEGER NOT NULL,
	probe_at          INTEGER,
	probe_interval_ms INTEGER NOT NULL DEFAULT 0,
	probe_id          TEXT
) STRICT;

-- A held delivery keeps the key it is parked under; intake never writes it.
ALTER TABLE deliveries ADD COLUMN parked_key TEXT;

-- The status CHECK of deliveries gains 'parked'. SQLite cannot alter a constraint, and
-- rebuilding the table would copy every delivery and, with foreign keys on, cascade the
-- drop of the old table into the attempts. Widening a CHECK changes no stored row, which
-- is the case SQLite's ALTER TABLE documentation names as safe to make by editing the
-- schema text ("making other kinds of table schema changes"); migrate.go bumps schema_version after a migration so every connection
-- reloads the schema.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
	SET sql = replace(sql, '''dead'', ''skipped'')', '''dead'', ''skipped'', ''parked'')')
	WHERE type = 'table' AND name = 'deliveries';
PRAGMA writable_schema = RESET;

-- The parked deliveries of a destination in created order: the probe takes the first,
-- an unpark resumes them all.
CREATE INDEX deliveries_parked ON deliveries (parked_key, created_at, id) WHERE status = 'parked';
