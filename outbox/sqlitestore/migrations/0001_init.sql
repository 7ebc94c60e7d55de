-- Times are INTEGER unix microseconds in UTC: they compare and sort as numbers, which is
-- what the claim query orders by. UUIDs are canonical lower-case text.

CREATE TABLE submissions (
	id              TEXT PRIMARY KEY,
	form            TEXT NOT NULL,
	status          TEXT NOT NULL CHECK (status IN ('accepted', 'spam', 'quarantined')),
	reason          TEXT NOT NULL DEFAULT '',
	data            TEXT NOT NULL CHECK (json_valid(data)),
	meta            TEXT NOT NULL CHECK (json_valid(meta)),
	idempotency_key TEXT,
	content_hash    TEXT NOT NULL DEFAULT '',
	test            INTEGER NOT NULL DEFAULT 0 CHECK (test IN (0, 1)),
	created_at      INTEGER NOT NULL,
	UNIQUE (form, idempotency_key)
) STRICT;

CREATE INDEX submissions_created_at ON submissions (created_at);

CREATE TABLE deliveries (
	id                  TEXT PRIMARY KEY,
	submission_id       TEXT NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
	route               TEXT NOT NULL,
	channel             TEXT NOT NULL,
	recipient           TEXT NOT NULL,
	status              TEXT NOT NULL CHECK (status IN ('pending', 'sending', 'failed', 'sent', 'dead', 'skipped')),
	attempts            INTEGER NOT NULL DEFAULT 0,
	max_attempts        INTEGER NOT NULL DEFAULT 0,
	next_attempt_at     INTEGER NOT NULL,
	lease_owner         TEXT NOT NULL DEFAULT '',
	lease_token         TEXT NOT NULL DEFAULT '',
	locked_until        INTEGER,
	last_error          TEXT NOT NULL DEFAULT '',
	provider            TEXT NOT NULL DEFAULT '',
	provider_message_id TEXT NOT NULL DEFAULT '',
	payload             TEXT NOT NULL CHECK (json_valid(payload)),
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL,
	sent_at             INTEGER,
	UNIQUE (submission_id, route, recipient)
) STRICT;

-- The claim query reads only due rows and expired leases; these partial indexes keep it
-- cheap however much sent history accumulates.
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status IN ('pending', 'failed');
CREATE INDEX deliveries_leased ON deliveries (locked_until) WHERE status = 'sending';
CREATE INDEX deliveries_status ON deliveries (status, next_attempt_at);

CREATE TABLE delivery_attempts (
	delivery_id         TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
	attempt             INTEGER NOT NULL,
	provider            TEXT NOT NULL DEFAULT '',
	started_at          INTEGER NOT NULL,
	finished_at         INTEGER NOT NULL,
	outcome             TEXT NOT NULL CHECK (outcome IN ('sent', 'temporary', 'permanent', 'ambiguous')),
	http_status         INTEGER NOT NULL DEFAULT 0,
	error_code          TEXT NOT NULL DEFAULT '',
	error               TEXT NOT NULL DEFAULT '',
	provider_message_id TEXT NOT NULL DEFAULT '',
	UNIQUE (delivery_id, attempt)
) STRICT;

-- Events outlive what they refer to (retention may prune a submission), so no foreign keys.
CREATE TABLE events (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	kind          TEXT NOT NULL,
	submission_id TEXT,
	delivery_id   TEXT,
	data          TEXT NOT NULL CHECK (json_valid(data)),
	at            INTEGER NOT NULL
) STRICT;

CREATE INDEX events_kind ON events (kind, id);
CREATE INDEX events_submission ON events (submission_id);
