-- name: CompleteDelivery
-- The fenced outcome write; no row returned means the lease was lost. ?1 status,
-- ?2 next_attempt_at, ?3 last_error, ?4 provider, ?5 provider_message_id, ?6 now, ?7 id,
-- ?8 lease token.
UPDATE deliveries SET
		status = ?1,
		next_attempt_at = CASE WHEN ?1 = 'failed' THEN ?2 ELSE next_attempt_at END,
		last_error = ?3,
		provider = ?4,
		provider_message_id = ?5,
		lease_owner = '',
		lease_token = '',
		locked_until = NULL,
		updated_at = ?6,
		sent_at = CASE WHEN ?1 = 'sent' THEN ?6 ELSE sent_at END
	WHERE id = ?7 AND status = 'sending' AND lease_token = ?8 AND lease_token <> ''
	RETURNING submission_id, attempts

-- name: LastAttempt
SELECT COALESCE(MAX(attempt), 0) FROM delivery_attempts
	WHERE delivery_id = ?

-- name: InsertAttempt
INSERT INTO delivery_attempts ({{AttemptColumns}})
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: InsertDeliveryEvent
INSERT INTO events (kind, submission_id, delivery_id, data, at)
	VALUES (?, ?, ?, ?, ?)
