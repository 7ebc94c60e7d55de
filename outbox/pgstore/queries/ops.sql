-- The operator API's reads and the retention pass (ops.go).

-- name: DeliveriesByStatus
-- ListDeliveriesByStatus's head; ops.go adds the conditions below that apply, then
-- DeliveriesByStatusOrder and a LIMIT. Each $? is numbered when the query is built.
SELECT {{DeliveryColumns}} FROM deliveries

-- name: DeliveriesByStatusOrder
ORDER BY next_attempt_at DESC, id DESC

-- name: DeliveryStatusIs
status = $?

-- name: DeliveryBeforeCursor
(next_attempt_at, id) < ($?, $?)

-- name: Stats
-- Only the partial indexes of live work and the status index, never the sent history.
SELECT
		(SELECT count(*) FROM deliveries WHERE status IN ('pending', 'failed')),
		(SELECT count(*) FROM deliveries WHERE status = 'sending'),
		(SELECT count(*) FROM deliveries WHERE status IN ('pending', 'failed') AND next_attempt_at <= $1),
		(SELECT min(next_attempt_at) FROM deliveries WHERE status IN ('pending', 'failed') AND next_attempt_at <= $1),
		(SELECT count(*) FROM deliveries WHERE status = 'dead')

-- name: PruneSubmissions
-- Expired submissions whose deliveries are all terminal, cascading to deliveries and
-- attempts. Rows a worker has locked are skipped rather than waited for.
--
-- Each batch must cost the same however large the tables are (bench/RESULTS.md,
-- "Retention under load"). Written as a plain NOT EXISTS inside IN (...), PostgreSQL
-- made the check an anti join against a sequential scan of every non-terminal
-- delivery (it expects few), reading the whole deliveries table once per batch, and
-- could join the batch back to submissions by a scan of that table: a batch of 500
-- took 0.5 s over 100,000 submissions. OFFSET 0 keeps the check a subquery run for
-- each candidate on the deliveries (submission_id, ...) index, and = ANY (ARRAY(...))
-- deletes the batch by primary key.
DELETE FROM submissions WHERE id = ANY (ARRAY(
		SELECT s.id FROM submissions s
		WHERE s.created_at < $1 AND NOT EXISTS (
			SELECT 1 FROM deliveries d
			WHERE d.submission_id = s.id AND d.status NOT IN ('sent', 'dead', 'skipped')
			OFFSET 0)
		ORDER BY s.created_at LIMIT $2
		FOR UPDATE SKIP LOCKED))

-- name: PruneEvents
-- Oldest id first, so the scan stops at the first young event instead of reading them all.
DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT $2) AND at < $1

-- name: TryPrunerLock
SELECT pg_try_advisory_lock($1)

-- name: PrunerUnlock
SELECT pg_advisory_unlock($1)
