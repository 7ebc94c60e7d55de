-- name: Claim
-- Picks due rows oldest first and leases them in one statement. SKIP LOCKED lets
-- concurrent claimers (goroutines, processes, Caddy instances) each take different rows
-- without waiting; a row another claimer leased and committed meanwhile fails the
-- re-checked WHERE and is dropped, so no row is ever handed out twice.
--
-- Due rows and expired leases are two branches, each an ordered scan of its own partial
-- index (deliveries_due, deliveries_leased) stopped by the LIMIT: one WHERE with an OR
-- between them made PostgreSQL collect and sort every due row on each claim, which grows
-- with the backlog. The expired branch is ordered by locked_until, its index's order
-- (normally it is empty; after a crash, the longest-expired leases come first); the
-- union is then ordered by next_attempt_at as before. Rows a branch locked but the final
-- LIMIT leaves out stay unleased, locked only until this statement's transaction ends.
--
-- RETURNING spells DeliveryColumns with the d. qualifier: pick has an id column too.
WITH due AS (
	SELECT id, next_attempt_at FROM deliveries
	WHERE status IN ('pending', 'failed') AND next_attempt_at <= $1
	ORDER BY next_attempt_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), expired AS (
	SELECT id, next_attempt_at FROM deliveries
	WHERE status = 'sending' AND locked_until < $1
	ORDER BY locked_until
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), pick AS (
	SELECT id FROM (SELECT * FROM due UNION ALL SELECT * FROM expired) c
	ORDER BY next_attempt_at, id
	LIMIT $2
)
UPDATE deliveries d SET
	status = 'sending',
	lease_owner = $3,
	lease_token = gen_random_uuid()::text,
	locked_until = $4,
	attempts = d.attempts + 1,
	updated_at = $1
FROM pick
WHERE d.id = pick.id
RETURNING d.id, d.submission_id, d.route, d.channel, d.recipient, d.status, d.attempts, d.max_attempts,
	d.next_attempt_at, d.lease_owner, d.lease_token, d.locked_until, d.last_error, d.provider,
	d.provider_message_id, d.payload, d.created_at, d.updated_at, d.sent_at
