-- Digests (docs/design.md, "Digests"; migration 0006).

-- name: DigestRouteSince
-- Records (form, route) from since on, unless recorded before; returns the recorded time
-- either way (the no-op update makes RETURNING answer on a conflict too).
INSERT INTO digest_routes (form, route, since) VALUES (?, ?, ?)
	ON CONFLICT (form, route) DO UPDATE SET since = digest_routes.since
	RETURNING since

-- name: UndigestedSubmissions
-- The form's accepted submissions created in [from, until) that no digest of the route
-- lists yet, oldest first; submissions_form_created serves the range. A test submission
-- (a `_test` post, a canary) is not a lead, so no digest lists it.
SELECT s.id, s.created_at, s.data, s.test FROM submissions s
	WHERE NOT s.test AND s.form = ? AND s.status = 'accepted' AND s.created_at >= ? AND s.created_at < ?
		AND NOT EXISTS (SELECT 1 FROM digest_items i
			WHERE i.form = s.form AND i.route = ? AND i.submission_id = s.id)
	ORDER BY s.created_at, s.id

-- name: DigestPeriods
SELECT period_start FROM digests
	WHERE form = ? AND route = ? AND period_start >= ? AND period_start < ?
	ORDER BY period_start

-- name: InsertDigest
-- No row inserted: the period has its digest already.
INSERT INTO digests (form, route, period_start, period_end, submissions, anchor_id, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT DO NOTHING

-- name: InsertDigestItem
-- No row inserted: another digest of the route lists the submission already.
INSERT INTO digest_items (form, route, submission_id, period_start) VALUES (?, ?, ?, ?)
	ON CONFLICT DO NOTHING
