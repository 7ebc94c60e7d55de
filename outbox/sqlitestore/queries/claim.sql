-- name: Claim
-- One UPDATE inside an IMMEDIATE transaction on the single writer (claim.go): two
-- claimers can never lease the same row. Parameters: owner, locked_until, now, now, now,
-- limit.
UPDATE deliveries SET
		status = 'sending',
		lease_owner = ?,
		lease_token = lower(hex(randomblob(16))),
		locked_until = ?,
		attempts = attempts + 1,
		updated_at = ?
	WHERE id IN (
		SELECT id FROM deliveries
		WHERE (status IN ('pending', 'failed') AND next_attempt_at <= ?)
		   OR (status = 'sending' AND locked_until < ?)
		ORDER BY next_attempt_at, id
		LIMIT ?)
	RETURNING {{DeliveryColumns}}
