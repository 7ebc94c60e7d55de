-- Owner alerts (docs/design.md, "Alerts"). One row per alert of a (kind, key): open while
-- resolved_at is NULL. The partial unique index is what makes one open alert per (kind,
-- key) across every instance: the insert that opens one skips the row when another
-- transaction opened it first, and the notice's deliveries are written in that same
-- transaction or not at all. No foreign key to the notices' submissions: retention may
-- prune those, the alert's history stays.
CREATE TABLE alerts (
	id          uuid PRIMARY KEY,
	kind        text NOT NULL,
	key         text NOT NULL,
	form        text NOT NULL DEFAULT '',
	summary     text NOT NULL DEFAULT '',
	affected    integer NOT NULL DEFAULT 0,
	channel     text NOT NULL DEFAULT '',
	destination text NOT NULL DEFAULT '',
	instance    text NOT NULL DEFAULT '',
	notices     integer NOT NULL DEFAULT 1,
	opened_at   timestamptz NOT NULL,
	notified_at timestamptz NOT NULL,
	resolved_at timestamptz
);

CREATE UNIQUE INDEX alerts_open ON alerts (kind, key) WHERE resolved_at IS NULL;
CREATE INDEX alerts_resolved ON alerts (resolved_at) WHERE resolved_at IS NOT NULL;

-- The feedback_rate alert counts the reports received in a window (queries/alert.sql,
-- FeedbackCounts); feedback rows are written once each, after the send, never on a hot
-- path.
CREATE INDEX delivery_feedback_received ON delivery_feedback (received_at);
