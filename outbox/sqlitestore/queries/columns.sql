-- The column lists of the tables, in the order scanSubmission, scanDelivery and
-- scanAttempt (read.go) read them. Every query of the other files includes them.

-- name: SubmissionColumns
-- The submission columns Accept writes (then unbound_key).
id, form, status, reason, data, meta, idempotency_key, content_hash, test, created_at

-- name: SubmissionSelect
-- What scanSubmission reads: the key of a row, bound or not.
id, form, status, reason, data, meta, COALESCE(idempotency_key, unbound_key), content_hash, test, created_at

-- name: DeliveryColumns
id, submission_id, route, channel, recipient, status, attempts, max_attempts,
	next_attempt_at, lease_owner, lease_token, locked_until, last_error, provider,
	provider_message_id, payload, created_at, updated_at, sent_at

-- name: AttemptColumns
delivery_id, attempt, provider, started_at, finished_at, outcome,
	http_status, error_code, error, provider_message_id, body_sha256
