-- Tables live in the schema first on search_path (pgstore.Config.Schema, or the default).
-- data/meta/payload are json, not jsonb: json keeps the submitted key order byte for byte.

CREATE TABLE submissions (
	id              uuid PRIMARY KEY,
	form            text NOT NULL,
	status          text NOT NULL CHECK (status IN ('accepted', 'spam', 'quarantined')),
	reason          text NOT NULL DEFAULT '',
	data            json NOT NULL,
	meta            json NOT NULL,
	idempotency_key text,
	content_hash    text NOT NULL DEFAULT '',
	test            boolean NOT NULL DEFAULT false,
	created_at      timestamptz NOT NULL,
	UNIQUE (form, idempotency_key)
);

CREATE INDEX submissions_created_at ON submissions (created_at);

CREATE TABLE deliveries (
	id                  uuid PRIMARY KEY,
	submission_id       uuid NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
	route               text NOT NULL,
	channel             text NOT NULL,
	recipient           text NOT NULL,
	status              text NOT NULL CHECK (status IN ('pending', 'sending', 'failed', 'sent', 'dead', 'skipped')),
	attempts            integer NOT NULL DEFAULT 0,
	max_attempts        integer NOT NULL DEFAULT 0,
	next_attempt_at     timestamptz NOT NULL,
	lease_owner         text NOT NULL DEFAULT '',
	lease_token         text NOT NULL DEFAULT '',
	locked_until        timestamptz,
	last_error          text NOT NULL DEFAULT '',
	provider            text NOT NULL DEFAULT '',
	provider_message_id text NOT NULL DEFAULT '',
	payload             json NOT NULL,
	created_at          timestamptz NOT NULL,
	updated_at          timestamptz NOT NULL,
	sent_at             timestamptz,
	UNIQUE (submission_id, route, recipient)
);

-- The claim query reads only due rows and expired leases; these partial indexes keep it
-- cheap however much sent history accumulates.
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status IN ('pending', 'failed');
CREATE INDEX deliveries_leased ON deliveries (locked_until) WHERE status = 'sending';
CREATE INDEX deliveries_status ON deliveries (status, next_attempt_at);

CREATE TABLE delivery_attempts (
	delivery_id         uuid NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
	attempt             integer NOT NULL,
	provider            text NOT NULL DEFAULT '',
	started_at          timestamptz NOT NULL,
	finished_at         timestamptz NOT NULL,
	outcome             text NOT NULL CHECK (outcome IN ('sent', 'temporary', 'permanent', 'ambiguous')),
	http_status         integer NOT NULL DEFAULT 0,
	error_code          text NOT NULL DEFAULT '',
	error               text NOT NULL DEFAULT '',
	provider_message_id text NOT NULL DEFAULT '',
	UNIQUE (delivery_id, attempt)
);

-- Events outlive what they refer to (retention may prune a submission), so no foreign keys.
CREATE TABLE events (
	id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	kind          text NOT NULL,
	submission_id uuid,
	delivery_id   uuid,
	data          json NOT NULL,
	at            timestamptz NOT NULL
);

CREATE INDEX events_kind ON events (kind, id);
CREATE INDEX events_submission ON events (submission_id);
