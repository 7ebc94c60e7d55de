-- Owner alerts (outbox/alerts.go; migration 0009). Each write of a notice is conditional
-- on the decision it was made on; the single writer serializes them.

-- name: InsertAlert
-- No row inserted: an alert of this (kind, key) is open (the partial index alerts_open).
INSERT INTO alerts (id, kind, key, form, summary, affected, channel, destination, instance,
		notices, opened_at, notified_at)
	VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10, ?10)
	ON CONFLICT DO NOTHING

-- name: RenotifyAlert
UPDATE alerts SET notices = notices + 1, notified_at = ?2, summary = ?4, affected = ?5
	WHERE id = ?1 AND resolved_at IS NULL AND notified_at <= ?3

-- name: RefreshAlert
UPDATE alerts SET summary = ?2, affected = ?3 WHERE id = ?1 AND resolved_at IS NULL

-- name: ResolveAlert
UPDATE alerts SET resolved_at = ?2 WHERE id = ?1 AND resolved_at IS NULL

-- name: InsertAlertSubmission
INSERT INTO submissions ({{SubmissionColumns}})
	VALUES (?1, ?2, ?3, '', ?4, '{}', NULL, '', ?5, ?6)

-- name: ListOpenAlerts
SELECT id, kind, key, form, summary, affected, channel, destination, instance, notices,
		opened_at, notified_at, resolved_at
	FROM alerts WHERE resolved_at IS NULL ORDER BY opened_at, id

-- name: ListResolvedAlerts
SELECT id, kind, key, form, summary, affected, channel, destination, instance, notices,
		opened_at, notified_at, resolved_at
	FROM alerts WHERE resolved_at IS NOT NULL ORDER BY resolved_at DESC, id LIMIT ?1

-- name: DeadDeliveryGroups
-- deliveries_status (status, next_attempt_at) finds the dead set; the join finds each
-- one's form by primary key. A test submission is no lead (a failed canary raises
-- canary_failed instead).
SELECT s.form, d.route, d.channel, COUNT(DISTINCT d.submission_id), MIN(d.updated_at)
	FROM deliveries d JOIN submissions s ON s.id = d.submission_id
	WHERE d.status = 'dead' AND s.form <> ?1 AND NOT s.test
	GROUP BY s.form, d.route, d.channel ORDER BY s.form, d.route, d.channel

-- name: FeedbackCounts
-- The reports received since ?1 by kind, through delivery_feedback_received, and the
-- submissions whose e-mail bounced or drew a complaint.
SELECT COUNT(*) FILTER (WHERE f.kind = 'delivered'), COUNT(*) FILTER (WHERE f.kind = 'bounced'),
		COUNT(*) FILTER (WHERE f.kind = 'complained'),
		COUNT(DISTINCT d.submission_id) FILTER (WHERE f.kind <> 'delivered')
	FROM delivery_feedback f JOIN deliveries d ON d.id = f.delivery_id
	WHERE f.received_at >= ?1
