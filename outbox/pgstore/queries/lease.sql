-- Every write after a claim is fenced (lease.go): it matches the row only while the row
-- is still sending under the caller's lease token.

-- name: Renew
UPDATE deliveries SET locked_until = $3
	WHERE id = $1 AND status = 'sending' AND lease_token = $2 AND lease_token <> ''

-- name: Release
UPDATE deliveries SET
		status = CASE WHEN attempts - 1 > 0 THEN 'failed' ELSE 'pending' END,
		attempts = GREATEST(attempts - 1, 0),
		lease_owner = '',
		lease_token = '',
		locked_until = NULL,
		next_attempt_at = $3,
		updated_at = $3
	WHERE id = $1 AND status = 'sending' AND lease_token = $2 AND lease_token <> ''
