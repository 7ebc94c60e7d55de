-- The lead ledger's intake counters (outbox/ledger_counter.go; docs/design.md, "The lead
-- ledger"): what only intake knows, posts answered success, spooled and replayed, counted
-- in memory by each instance and flushed here now and then, so intake's hot path writes
-- nothing more per post. The counts are cumulative per instance and a flush keeps the
-- greatest value (queries/ledger.sql), so a flush repeated after an unclear failure
-- counts nothing twice. day is the UTC day of the submissions' created_at.
CREATE TABLE ledger_counts (
	day        date NOT NULL,
	form       text NOT NULL,
	instance   text NOT NULL,
	answered   bigint NOT NULL DEFAULT 0,
	spooled    bigint NOT NULL DEFAULT 0,
	replayed   bigint NOT NULL DEFAULT 0,
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (day, form, instance)
);
