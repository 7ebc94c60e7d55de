-- Owner alerts (docs/design.md, "Alerts"). One row per alert of a (kind, key): open while
-- resolved_at is NULL. The partial unique index allows one open alert per (kind, key);
-- the notice's deliveries are written in the transaction that opened it. Times are
-- INTEGER unix microseconds in UTC, as everywhere in this store.
CREATE TABLE alerts (
	id          TEXT PRIMARY KEY,
	kind        TEXT NOT NULL,
	key         TEXT NOT NULL,
	form        TEXT NOT NULL DEFAULT '',
	summary     TEXT NOT NULL DEFAULT '',
	affected    INTEGER NOT NULL DEFAULT 0,
	channel     TEXT NOT NULL DEFAULT '',
	destination TEXT NOT NULL DEFAULT '',
	instance    TEXT NOT NULL DEFAULT '',
	notices     INTEGER NOT NULL DEFAULT 1,
	opened_at   INTEGER NOT NULL,
	notified_at INTEGER NOT NULL,
	resolved_at INTEGER
) STRICT;

CREATE UNIQUE INDEX alerts_open ON alerts (kind, key) WHERE resolved_at IS NULL;
CREATE INDEX alerts_resolved ON alerts (resolved_at) WHERE resolved_at IS NOT NULL;

-- The feedback_rate alert counts the reports received in a window (queries/alert.sql,
-- FeedbackCounts); feedback rows are written once each, after the send, never on a hot
-- path.
CREATE INDEX delivery_feedback_received ON delivery_feedback (received_at);
