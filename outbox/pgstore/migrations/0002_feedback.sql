-- Post-send feedback (bounces, complaints, deliveries reported by SES/Resend) lives in its
-- own table rather than in delivery_attempts: an attempt is one numbered try of ours,
-- feedback arrives later, maybe several times per try. Same shape as SQLite's.
CREATE TABLE delivery_feedback (
	id                  bigserial PRIMARY KEY,
	delivery_id         uuid NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
	source              text NOT NULL,
	kind                text NOT NULL CHECK (kind IN ('delivered', 'bounced', 'complained')),
	bounce_type         text NOT NULL DEFAULT '',
	diagnostic          text NOT NULL DEFAULT '',
	provider_message_id text NOT NULL DEFAULT '',
	receipt_id          text NOT NULL DEFAULT '',
	occurred_at         timestamptz NOT NULL,
	received_at         timestamptz NOT NULL
);

CREATE INDEX delivery_feedback_delivery ON delivery_feedback (delivery_id, id);

-- Feedback finds its delivery by the provider's message id.
CREATE INDEX deliveries_provider_message_id ON deliveries (provider_message_id) WHERE provider_message_id <> '';

-- Replay protection shared by every instance on this database.
CREATE TABLE feedback_receipts (
	source      text NOT NULL,
	receipt_id  text NOT NULL,
	received_at timestamptz NOT NULL,
	PRIMARY KEY (source, receipt_id)
);

CREATE INDEX feedback_receipts_received_at ON feedback_receipts (received_at);

CREATE TABLE suppressions (
	address     text PRIMARY KEY,
	reason      text NOT NULL,
	delivery_id uuid,
	created_at  timestamptz NOT NULL
);

CREATE INDEX suppressions_created_at ON suppressions (created_at);
