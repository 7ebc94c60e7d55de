-- name: CompleteOne
-- Complete in one statement, so a batch of them pipelines in a single round trip. The
-- fenced UPDATE returns nothing when the lease is gone, and then the attempt and the
-- event, which are inserted only from its row, are not written either. The attempt
-- number is raised past the history as Complete does; the UPDATE holds the delivery's
-- row lock, so no other writer numbers an attempt of it meanwhile. The parameters are
-- completeArgs' (complete_batch.go); the event's submission and delivery ($19, $20) are
-- the nil uuid when unset, NULL here (NULLIF), and then the delivery's.
WITH u AS (
	UPDATE deliveries SET
		status = $1,
		next_attempt_at = CASE WHEN $1 = 'failed' THEN $2 ELSE next_attempt_at END,
		last_error = $3,
		provider = $4,
		provider_message_id = $5,
		lease_owner = '',
		lease_token = '',
		locked_until = NULL,
		updated_at = $6,
		sent_at = CASE WHEN $1 = 'sent' THEN $6 ELSE sent_at END
	WHERE id = $7 AND status = 'sending' AND lease_token = $8 AND lease_token <> ''
	RETURNING id, submission_id, attempts
), a AS (
	INSERT INTO delivery_attempts ({{AttemptColumns}})
	SELECT u.id,
		GREATEST(CASE WHEN $9::int > 0 THEN $9::int ELSE u.attempts END,
			COALESCE((SELECT MAX(x.attempt) FROM delivery_attempts x WHERE x.delivery_id = u.id), 0) + 1),
		$10, $11, $12, $13, $14, $15, $16, $17
	FROM u
), e AS (
	INSERT INTO events (kind, submission_id, delivery_id, data, at)
	SELECT $18, COALESCE(NULLIF($19::uuid, {{NilUUID}}), u.submission_id),
		COALESCE(NULLIF($20::uuid, {{NilUUID}}), u.id), $21, $22
	FROM u WHERE $18 <> ''
)
SELECT submission_id FROM u

-- name: CompleteSet
-- CompleteOne over arrays: one statement records a whole batch, so the server plans and
-- runs it once instead of once per completion, which is most of its cost when sends
-- finish by the hundred (a burn-down). The fencing is the same, per row: a completion
-- whose lease is gone matches no row in u, so neither its attempt nor its event is
-- written, and its id is missing from the result. The arrays are completeColumns'
-- (complete_set.go); as in CompleteOne, an event's submission or delivery that is the
-- nil uuid is the delivery's.
WITH c AS (
	SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::timestamptz[],
		$7::uuid[], $8::text[], $9::int[], $10::text[], $11::timestamptz[], $12::timestamptz[], $13::text[],
		$14::int[], $15::text[], $16::text[], $17::text[], $18::text[], $19::uuid[], $20::uuid[], $21::text[],
		$22::timestamptz[])
	AS c(status, next, last_error, provider, pmid, now, id, token, att, aprov, started, finished, outcome,
		http, code, err, apmid, kind, esub, edeliv, data, at)
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
	WHERE d.id = c.id AND d.status = 'sending' AND d.lease_token = c.token AND d.lease_token <> ''
	RETURNING d.id, d.submission_id, d.attempts
), a AS (
	INSERT INTO delivery_attempts ({{AttemptColumns}})
	SELECT u.id,
		GREATEST(CASE WHEN c.att > 0 THEN c.att ELSE u.attempts END,
			COALESCE((SELECT MAX(x.attempt) FROM delivery_attempts x WHERE x.delivery_id = u.id), 0) + 1),
		c.aprov, c.started, c.finished, c.outcome, c.http, c.code, c.err, c.apmid
	FROM u JOIN c ON c.id = u.id
), e AS (
	INSERT INTO events (kind, submission_id, delivery_id, data, at)
	SELECT c.kind, COALESCE(NULLIF(c.esub, {{NilUUID}}), u.submission_id),
		COALESCE(NULLIF(c.edeliv, {{NilUUID}}), u.id), c.data::json, c.at
	FROM u JOIN c ON c.id = u.id WHERE c.kind <> ''
)
SELECT id FROM u
