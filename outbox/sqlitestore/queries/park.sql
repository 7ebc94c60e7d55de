-- Parked destinations (outbox/internal/storeflow/park.go runs these in one transaction
-- each, on the single writer; migrations/0008 made the table and the deliveries_parked
-- index).

-- name: ParkDestination
SELECT key, channel, label, reason, manual, parked_at, probe_at, probe_interval_ms, probe_id
	FROM destinations WHERE key = ?1

-- name: ParkInsertDestination
INSERT INTO destinations (key, channel, label, reason, manual, parked_at, probe_at, probe_interval_ms)
	VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
	ON CONFLICT (key) DO NOTHING

-- name: ParkMakeManual
UPDATE destinations SET manual = 1, reason = 'manual', probe_at = NULL WHERE key = ?1

-- name: ParkDeleteDestination
DELETE FROM destinations WHERE key = ?1

-- name: ParkSetProbe
UPDATE destinations SET probe_id = ?2, probe_at = ?3, probe_interval_ms = ?4 WHERE key = ?1

-- name: ParkHoldDelivery
-- Fenced like every write after a claim (queries/lease.sql). The attempt the claim
-- charged is given back: a held delivery spends none of its budget.
UPDATE deliveries SET
		status = 'parked',
		parked_key = ?3,
		attempts = max(attempts - 1, 0),
		last_error = CASE WHEN ?4 <> '' THEN ?4 ELSE last_error END,
		provider = CASE WHEN ?6 <> '' THEN ?6 ELSE provider END,
		lease_owner = '',
		lease_token = '',
		locked_until = NULL,
		updated_at = ?5
	WHERE id = ?1 AND status = 'sending' AND lease_token = ?2 AND lease_token <> ''

-- name: ParkInsertAttempt
INSERT INTO delivery_attempts ({{AttemptColumns}})
	SELECT ?1, max(?2, COALESCE((SELECT MAX(x.attempt) FROM delivery_attempts x WHERE x.delivery_id = ?1), 0) + 1),
		?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11

-- name: ParkOldest
SELECT id FROM deliveries WHERE parked_key = ?1 AND status = 'parked'
	ORDER BY created_at, id LIMIT 1

-- name: ParkMakeDue
UPDATE deliveries SET status = 'pending', next_attempt_at = ?2, updated_at = ?2
	WHERE id = ?1 AND status = 'parked'

-- name: ParkResume
-- Every held delivery becomes due at once, one microsecond apart in the order they were
-- created, the last at ?2, as on PostgreSQL (whose claim orders its due scan by
-- next_attempt_at alone): the next claim takes them all, in that order.
UPDATE deliveries SET status = 'pending', next_attempt_at = ?2 - o.n, updated_at = ?2
	FROM (SELECT id, row_number() OVER (ORDER BY created_at DESC, id DESC) - 1 AS n
		FROM deliveries WHERE parked_key = ?1 AND status = 'parked') AS o
	WHERE deliveries.id = o.id

-- name: ParkList
SELECT key, channel, label, reason, manual, parked_at, probe_at, probe_interval_ms, probe_id,
		(SELECT count(*) FROM deliveries d WHERE d.parked_key = x.key AND d.status = 'parked'),
		(SELECT count(DISTINCT d.submission_id) FROM deliveries d WHERE d.parked_key = x.key AND d.status = 'parked')
	FROM destinations x ORDER BY parked_at, key
