-- Digests (docs/design.md, "Digests"; migration 0006).

-- name: DigestRouteSince
-- Records (form, route) from since on, unless recorded before; returns the recorded time
-- either way (the no-op update makes RETURNING answer on a conflict too).
INSERT INTO digest_routes (form, route, since) VALUES ($1, $2, $3)
	ON CONFLICT (form, route) DO UPDATE SET since = digest_routes.since
	RETURNING since

-- name: UndigestedSubmissions
-- The form's accepted submissions created in [from, until) that no digest of the route
-- lists yet, oldest first; submissions_form_created serves the range. A test submission
-- (a `_test` post, a canary) is not a lead, so no digest lists it.
SELECT s.id, s.created_at, s.data, s.test FROM submissions s
	WHERE NOT s.test AND s.form = $1 AND s.status = 'accepted' AND s.created_at >= $2 AND s.created_at < $3
		AND NOT EXISTS (SELECT 1 FROM digest_items i
			WHERE i.form = s.form AND i.route = $4 AND i.submission_id = s.id)
	ORDER BY s.created_at, s.id

-- name: DigestPeriods
SELECT period_start FROM digests
	WHERE form = $1 AND route = $2 AND period_start >= $3 AND period_start < $4
	ORDER BY period_start

-- name: InsertDigest
-- No row inserted: the period has its digest already (a concurrent insert of the same
-- key waits for the other transaction, then inserts nothing if it committed).
INSERT INTO digests (form, route, period_start, period_end, submissions, anchor_id, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7)
	ON CONFLICT DO NOTHING

-- name: InsertDigestItems
-- Fewer rows inserted than ids given: another digest of the route lists one of them.
INSERT INTO digest_items (form, route, submission_id, period_start)
	SELECT $1, $2, id, $4 FROM unnest($3::uuid[]) AS id
	ON CONFLICT DO NOTHING

-- name: InsertDigestDelivery
INSERT INTO deliveries ({{DeliveryColumns}})
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16::json, $17, $18, $19)
