-- name: UseToken
-- A used spam token (outbox.TokenLedger): the first use inserts the row; a later one
-- leaves it as it is and reads the first use's content hash (the no-op update makes the
-- conflicting row come back through RETURNING).
INSERT INTO used_tokens (id, content_hash, expires_at) VALUES (?1, ?2, ?3)
	ON CONFLICT (id) DO UPDATE SET content_hash = used_tokens.content_hash
	RETURNING content_hash

-- name: PruneUsedTokens
-- Tokens past their expiry, which the intake refuses as expired on their own. One batch.
DELETE FROM used_tokens WHERE id IN (
	SELECT id FROM used_tokens WHERE expires_at < ?1 ORDER BY expires_at LIMIT ?2)
