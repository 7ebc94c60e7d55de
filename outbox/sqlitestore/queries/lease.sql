-- Every write after a claim is fenced (lease.go): it matches the row only while the row
-- is still sending under the caller's lease token.

-- name: Renew
UPDATE deliveries SET locked_until = ?
	WHERE id = ? AND status = 'sending' AND lease_token = ? AND lease_token <> ''

-- name: Release
-- ?1 now, ?2 id, ?3 lease token.
UPDATE deliveries SET
		status = CASE WHEN attempts - 1 > 0 THEN 'failed' ELSE 'pending' END,
		attempts = MAX(attempts - 1, 0),
		lease_owner = '',
		lease_token = '',
		locked_until = NULL,
		next_attempt_at = ?1,
		updated_at = ?1
	WHERE id = ?2 AND status = 'sending' AND lease_token = ?3 AND lease_token <> ''
