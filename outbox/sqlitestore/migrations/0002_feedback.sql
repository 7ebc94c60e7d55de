-- Post-send feedback (bounces, complaints, deliveries reported by SES/Resend) lives in its
-- own table rather than in delivery_attempts: an attempt is one numbered try of ours,
-- feedback arrives later, maybe several times per try, and widening the attempts' CHECK
-- would need a table rebuild in SQLite.
CREATE TABLE delivery_feedback (
	id                  INTEGER PRIMARY KEY AUTOINCREMENT,
	delivery_id         TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
	source              TEXT NOT NULL,
	kind                TEXT NOT NULL CHECK (kind IN ('delivered', 'bounced', 'complained')),
	bounce_type         TEXT NOT NULL DEFAULT '',
	diagnostic          TEXT NOT NULL DEFAULT '',
	provider_message_id TEXT NOT NULL DEFAULT '',
	receipt_id          TEXT NOT NULL DEFAULT '',
	occurred_at         INTEGER NOT NULL,
	received_at         INTEGER NOT NULL
) STRICT;

CREATE INDEX delivery_feedback_delivery ON delivery_feedback (delivery_id, id);

-- Feedback finds its delivery by the provider's message id.
CREATE INDEX deliveries_provider_message_id ON deliveries (provider_message_id) WHERE provider_message_id <> '';

-- Replay protection: one row per accepted feedback message, shared by every process on
-- this file.
CREATE TABLE feedback_receipts (
	source      TEXT NOT NULL,
	receipt_id  TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	PRIMARY KEY (source, receipt_id)
) STRICT;

CREATE INDEX feedback_receipts_received_at ON feedback_receipts (received_at);

CREATE TABLE suppressions (
	address     TEXT PRIMARY KEY,
	reason      TEXT NOT NULL,
	delivery_id TEXT,
	created_at  INTEGER NOT NULL
) STRICT;

CREATE INDEX suppressions_created_at ON suppressions (created_at);
