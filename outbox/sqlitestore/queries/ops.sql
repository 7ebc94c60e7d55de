-- The operator API's reads and the retention pass (ops.go).

-- name: DeliveriesByStatus
-- ListDeliveriesByStatus's head; ops.go adds the conditions below that apply, then
-- DeliveriesByStatusOrder.
SELECT {{DeliveryColumns}} FROM deliveries

-- name: DeliveriesByStatusOrder
ORDER BY next_attempt_at DESC, id DESC LIMIT ?

-- name: DeliveryStatusIs
status = ?

-- name: DeliveryBeforeCursor
-- The cursor's time twice, then its id.
(next_attempt_at < ? OR (next_attempt_at = ? AND id < ?))

-- name: Stats
-- Only the partial indexes of live work and the status index, never the sent history.
SELECT
		(SELECT COUNT(*) FROM deliveries WHERE status IN ('pending', 'failed')),
		(SELECT COUNT(*) FROM deliveries WHERE status = 'sending'),
		(SELECT COUNT(*) FROM deliveries WHERE status IN ('pending', 'failed') AND next_attempt_at <= ?1),
		(SELECT MIN(next_attempt_at) FROM deliveries WHERE status IN ('pending', 'failed') AND next_attempt_at <= ?1),
		(SELECT COUNT(*) FROM deliveries WHERE status = 'dead')

-- name: PruneSubmissions
-- Expired submissions whose deliveries are all terminal, cascading to deliveries and
-- attempts. ?1 before, ?2 batch.
DELETE FROM submissions WHERE id IN (
		SELECT s.id FROM submissions s
		WHERE s.created_at < ?1 AND NOT EXISTS (
			SELECT 1 FROM deliveries d
			WHERE d.submission_id = s.id AND d.status NOT IN ('sent', 'dead', 'skipped'))
		ORDER BY s.created_at LIMIT ?2)

-- name: PruneEvents
-- Oldest id first, so the scan stops at the first young event instead of reading them
-- all. ?1 before, ?2 batch.
DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT ?2) AND at < ?1

-- name: CheckpointWAL
-- See scrubWAL (erase.go).
PRAGMA wal_checkpoint(TRUNCATE)
