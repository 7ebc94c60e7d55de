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
-- Expired submissions whose deliveries are all terminal, with their deliveries: the number
-- of submissions and the deliveries' ids, whose attempts DeleteAttempts removes next
-- (no foreign key: migrations/0008). Rows a worker has locked are skipped rather than
-- waited for.
--
-- Each batch must cost the same however large the tables are (bench/RESULTS.md,
-- "Retention under load"). Written as a plain NOT EXISTS, PostgreSQL made the check an
-- anti join against a sequential scan of every non-terminal delivery (it expects few),
-- reading the whole deliveries table once per batch, and could join the batch back to
-- submissions by a scan of that table: a batch of 500 took 0.5 s over 100,000
-- submissions. OFFSET 0 keeps the check a subquery run for each candidate on the
-- deliveries (submission_id, ...) index, and = ANY (ARRAY(...)) deletes by index.
WITH old AS (
	SELECT s.id FROM submissions s
	WHERE s.created_at < $1 AND NOT EXISTS (
		SELECT 1 FROM deliveries d
		WHERE d.submission_id = s.id AND d.status NOT IN ('sent', 'dead', 'skipped')
		OFFSET 0)
	ORDER BY s.created_at LIMIT $2
	FOR UPDATE SKIP LOCKED
), d AS (
	DELETE FROM deliveries WHERE submission_id = ANY (ARRAY(SELECT id FROM old)) RETURNING id
), s AS (
	DELETE FROM submissions WHERE id = ANY (ARRAY(SELECT id FROM old)) RETURNING id
)
SELECT (SELECT count(*) FROM s), COALESCE((SELECT array_agg(id) FROM d), '{}')

-- name: DeleteAttempts
-- The attempts of the deliveries just deleted (ActErase, PruneSubmissions), in the same
-- transaction. A statement of its own, after the delete, so that it sees every attempt
-- committed before the delete took its deliveries' row locks: a completion that commits
-- while the delete waits for the row is read by this statement's fresh snapshot (one
-- statement's CTEs would share the older one), and a completion that comes after the
-- lock finds its delivery gone and writes no attempt (queries/complete.sql).
DELETE FROM delivery_attempts WHERE delivery_id = ANY($1::uuid[])

-- name: PruneEvents
-- Oldest id first, so the scan stops at the first young event instead of reading them all.
DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT $2) AND at < $1

-- name: TryPrunerLock
SELECT pg_try_advisory_lock($1)

-- name: PrunerUnlock
SELECT pg_advisory_unlock($1)
