-- name: UseToken
-- A used spam token (outbox.TokenLedger): the first use inserts the row; a later one
-- leaves it as it is and reads the first use's content hash (the no-op update locks the
-- row and makes it come back through RETURNING, also when a concurrent first use
-- commits while this one waits).
INSERT INTO used_tokens AS u (id, content_hash, expires_at) VALUES ($1, $2, $3)
	ON CONFLICT (id) DO UPDATE SET content_hash = u.content_hash
	RETURNING content_hash

-- name: PruneUsedTokens
-- Tokens past their expiry, which the intake refuses as expired on their own. One batch;
-- a row a use is touching is left for the next run.
DELETE FROM used_tokens WHERE id IN (
	SELECT id FROM used_tokens WHERE expires_at < $1 ORDER BY expires_at LIMIT $2
	FOR UPDATE SKIP LOCKED)
