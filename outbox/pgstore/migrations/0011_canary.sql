-- The canary (docs/design.md, "Canary"): a synthetic test submission per form and
-- period, planned through every route, and the verdict on each route.

-- One row per run. The primary key is what makes one run per period with several
-- instances and restarts. No foreign key: the row outlives what retention prunes, so a
-- pruned period is never run again.
CREATE TABLE canary_runs (
	form          text NOT NULL,
	period_start  timestamptz NOT NULL,
	submission_id uuid NOT NULL,
	created_at    timestamptz NOT NULL,
	PRIMARY KEY (form, period_start)
);

-- The last verdict per route: replaced only by a verdict on a later run, so the first
-- scheduler to judge a run decides it.
CREATE TABLE canary_results (
	form          text NOT NULL,
	route         text NOT NULL,
	channel       text NOT NULL,
	period_start  timestamptz NOT NULL,
	submission_id uuid NOT NULL,
	passed        boolean NOT NULL,
	error         text NOT NULL,
	at            timestamptz NOT NULL,
	-- when the failed verdicts in a row began; NULL after a pass
	failing_since timestamptz,
	PRIMARY KEY (form, route)
);
