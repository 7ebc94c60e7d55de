-- The canary (docs/design.md, "Canary"; migration 0011).

-- name: InsertCanaryRun
-- No row inserted: the period has its run already.
INSERT INTO canary_runs (form, period_start, submission_id, created_at) VALUES ($1, $2, $3, $4)
	ON CONFLICT DO NOTHING

-- name: LastCanaryRun
SELECT form, period_start, submission_id, created_at FROM canary_runs
	WHERE form = $1 ORDER BY period_start DESC LIMIT 1

-- name: UpsertCanaryResult
-- No row changed: the route's stored verdict is of this run or a later one. A failure
-- keeps the failing_since of the failures before it; a pass clears it.
INSERT INTO canary_results (form, route, channel, period_start, submission_id, passed, error, at, failing_since)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
	ON CONFLICT (form, route) DO UPDATE SET channel = excluded.channel,
		period_start = excluded.period_start, submission_id = excluded.submission_id,
		passed = excluded.passed, error = excluded.error, at = excluded.at,
		failing_since = CASE WHEN excluded.passed THEN NULL
			ELSE COALESCE(canary_results.failing_since, excluded.failing_since) END
	WHERE canary_results.period_start < excluded.period_start

-- name: CanaryResults
SELECT form, route, channel, period_start, submission_id, passed, error, at, failing_since FROM canary_results
	ORDER BY form, route
