-- Parked destinations (docs/design.md, "Parked destinations"). A destination that keeps
-- failing is parked: its deliveries wait in status parked, not due, spending no attempt,
-- until a probe gets through or an operator unparks it. The row is the park; unparking
-- deletes it. Keys never hold a secret (outbox/destination.go).
CREATE TABLE destinations (
	key               text PRIMARY KEY,
	channel           text NOT NULL,
	label             text NOT NULL,
	reason            text NOT NULL DEFAULT '',
	manual            boolean NOT NULL DEFAULT false,
	parked_at         timestamptz NOT NULL,
	probe_at          timestamptz,
	probe_interval_ms bigint NOT NULL DEFAULT 0,
	probe_id          uuid
);

-- A held delivery keeps the key it is parked under; the column stays as it was after an
-- unpark (harmless: only parked rows are read by it). Intake never writes it.
ALTER TABLE deliveries ADD COLUMN parked_key text;

-- The status CHECK gains 'parked'. NOT VALID: the new constraint is wider than the old,
-- so every stored row passes it, and checking them would read the whole table under the
-- migration's lock.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
	CHECK (status IN ('pending', 'sending', 'failed', 'sent', 'dead', 'skipped', 'parked')) NOT VALID;

-- The parked deliveries of a destination in created order: the probe takes the first,
-- an unpark resumes them all. Only parked rows are in it, so the claim and the other
-- statuses pay nothing for it.
CREATE INDEX deliveries_parked ON deliveries (parked_key, created_at, id) WHERE status = 'parked';
