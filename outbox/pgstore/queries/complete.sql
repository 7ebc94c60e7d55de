-- name: CompleteSet
-- The one complete statement: it records a whole batch over arrays, so the server plans
-- and runs it once instead of once per completion, which is most of its cost when sends
-- finish by the hundred (a burn-down); CompleteBatch runs it once per completion only to
-- set aside a bad one. The fencing is per row: the UPDATE matches a delivery only while
-- it is sending under the completion's lease token, and a completion whose lease is gone
-- matches no row in u, so neither its attempt nor its event is written, and its id is
-- missing from the result. The attempt number is raised past the history; the UPDATE
-- holds the delivery's row lock, so no other writer numbers an attempt of it meanwhile.
-- The arrays are completeColumns' (complete_set.go); an event's submission or delivery
-- that is the nil uuid is the delivery's.
--
-- The status test is written IS TRUE so that no index on status can answer it: the
-- planner estimates the batch at 10 rows and, from statistics taken while few rows were
-- leased, the sending rows at 1, and then read every leased row through the status index
-- and hashed them, per batch (10,000 rows leased: 16 ms of a 35 ms batch of 256). Each
-- completion is now one primary-key lookup, whatever the number of leases.
WITH c AS (
	SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::timestamptz[],
		$7::uuid[], $8::text[], $9::int[], $10::text[], $11::timestamptz[], $12::timestamptz[], $13::text[],
		$14::int[], $15::text[], $16::text[], $17::text[], $18::text[], $19::uuid[], $20::uuid[], $21::text[],
		$22::timestamptz[], $23::text[])
	AS c(status, next, last_error, provider, pmid, now, id, token, att, aprov, started, finished, outcome,
		http, code, err, apmid, kind, esub, edeliv, data, at, body)
), u AS (
	UPDATE deliveries d SET
		status = c.status,
		next_attempt_at = CASE WHEN c.status = 'failed' THEN c.next ELSE d.next_attempt_at END,
		last_error = c.last_error,
		provider = c.provider,
		provider_message_id = c.pmid,
		lease_owner = '',
		lease_token = '',
		locked_until = NULL,
		updated_at = c.now,
		sent_at = CASE WHEN c.status = 'sent' THEN c.now ELSE d.sent_at END
	FROM c
	WHERE d.id = c.id AND (d.status = 'sending') IS TRUE AND d.lease_token = c.token AND d.lease_token <> ''
	RETURNING d.id, d.submission_id, d.attempts
), a AS (
	INSERT INTO delivery_attempts ({{AttemptColumns}})
	SELECT u.id,
		GREATEST(CASE WHEN c.att > 0 THEN c.att ELSE u.attempts END,
			COALESCE((SELECT MAX(x.attempt) FROM delivery_attempts x WHERE x.delivery_id = u.id), 0) + 1),
		c.aprov, c.started, c.finished, c.outcome, c.http, c.code, c.err, c.apmid, c.body
	FROM u JOIN c ON c.id = u.id
), e AS (
	INSERT INTO events (kind, submission_id, delivery_id, data, at)
	SELECT c.kind, COALESCE(NULLIF(c.esub, {{NilUUID}}), u.submission_id),
		COALESCE(NULLIF(c.edeliv, {{NilUUID}}), u.id), c.data::json, c.at
	FROM u JOIN c ON c.id = u.id WHERE c.kind <> ''
)
SELECT id FROM u
