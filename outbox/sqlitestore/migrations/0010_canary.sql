-- The canary (docs/design.md, "Canary"): a synthetic test submission per form and
-- period, planned through every route, and the verdict on each route.
-- Times are INTEGER unix microseconds in UTC, as everywhere in this store.

-- One row per run. The primary key is what makes one run per period with several
-- instances and restarts. No foreign key: the row outlives what retention prunes, so a
-- pruned period is never run again.
CREATE TABLE canary_runs (
	form          TEXT NOT NULL,
	period_start  INTEGER NOT NULL,
	submission_id TEXT NOT NULL,
	created_at    INTEGER NOT NULL,
	PRIMARY KEY (form, period_start)
) STRICT;

-- The last verdict per route: replaced only by a verdict on a later run, so the first
-- scheduler to judge a run decides it.
CREATE TABLE canary_results (
	form          TEXT NOT NULL,
	route         TEXT NOT NULL,
	channel       TEXT NOT NULL,
	period_start  INTEGER NOT NULL,
	submission_id TEXT NOT NULL,
	passed        INTEGER NOT NULL,
	error         TEXT NOT NULL,
	at            INTEGER NOT NULL,
	-- when the failed verdicts in a row began; NULL after a pass
	failing_since INTEGER,
	PRIMARY KEY (form, route)
) STRICT;
