-- Digests (docs/design.md, "Digests"). A digest route gets no delivery per submission;
-- when a period closes, one digest is written per (form, route, period_start), listing
-- the form's accepted submissions not yet listed by an earlier digest of the route.
-- Times are INTEGER unix microseconds in UTC, as everywhere in this store.

-- digest_routes records when each (form, route) became a digest route: its first digest
-- lists from there, not the form's whole history.
CREATE TABLE digest_routes (
	form  TEXT NOT NULL,
	route TEXT NOT NULL,
	since INTEGER NOT NULL,
	PRIMARY KEY (form, route)
) STRICT;

-- One row per digest written. The primary key is what makes one digest per period with
-- several instances and restarts. No foreign key: like events, the row outlives what
-- retention prunes, so a pruned period is never digested again.
CREATE TABLE digests (
	form           TEXT NOT NULL,
	route          TEXT NOT NULL,
	period_start   INTEGER NOT NULL,
	period_end     INTEGER NOT NULL,
	submissions    INTEGER NOT NULL,
	anchor_id      TEXT NOT NULL,
	created_at     INTEGER NOT NULL,
	PRIMARY KEY (form, route, period_start)
) STRICT;

-- Which digest listed a submission: at most one per (form, route), so a submission that
-- arrives after its period's digest was written is listed by the next one, and never
-- twice. Pruning or erasing the submission removes its row.
CREATE TABLE digest_items (
	form          TEXT NOT NULL,
	route         TEXT NOT NULL,
	submission_id TEXT NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
	period_start  INTEGER NOT NULL,
	PRIMARY KEY (form, route, submission_id)
) STRICT;

CREATE INDEX digest_items_submission ON digest_items (submission_id);
