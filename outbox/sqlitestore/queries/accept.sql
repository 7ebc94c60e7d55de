-- name: FindDuplicate
-- An unbound key (NULL) matches no row: only the id can. The row with the submission's
-- own id comes first: a replay of a stored submission is its duplicate whatever the key.
SELECT id, status, content_hash FROM submissions
	WHERE id = ? OR (form = ? AND idempotency_key = ?)
	ORDER BY id = ? DESC LIMIT 1

-- name: InsertSubmission
INSERT INTO submissions ({{SubmissionColumns}}, unbound_key)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: InsertDelivery
INSERT INTO deliveries ({{DeliveryColumns}})
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: InsertSubmissionEvent
-- submission.received and the submission's extra events (sub.Events).
INSERT INTO events (kind, submission_id, delivery_id, data, at)
	VALUES (?, ?, NULLIF(?, ''), ?, ?)
