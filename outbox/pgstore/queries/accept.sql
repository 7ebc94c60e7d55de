-- name: PlannedDeliveryFields
-- The unnested delivery arrays of AcceptOne and AcceptSet (after the ids), in
-- plannedDeliveries.params order (accept_batch.go). The nullable locked_until and sent_at
-- travel as a time and a flag, NULL when the flag is false.
route, channel, recipient, status, attempts, max_attempts, next_attempt_at,
			lease_owner, lease_token, locked_until, locked, last_error, provider, provider_message_id,
			payload, created_at, updated_at, sent_at, sent

-- name: PlannedDeliveryValues
-- The deliveries' columns made of PlannedDeliveryFields, given the inserted submission s.
d.id, s.id, d.route, d.channel, d.recipient, d.status, d.attempts, d.max_attempts,
		d.next_attempt_at, d.lease_owner, d.lease_token, CASE WHEN d.locked THEN d.locked_until END,
		d.last_error, d.provider, d.provider_message_id, d.payload::json, d.created_at, d.updated_at,
		CASE WHEN d.sent THEN d.sent_at END

-- name: AcceptOne
-- One submission, its deliveries and its event in one statement, so that a batch of them
-- can be pipelined in a single round trip. ON CONFLICT DO NOTHING makes a duplicate write
-- nothing at all: the deliveries and the events are inserted only from the row the first
-- CTE returned. The deliveries and the submission's extra events (sub.Events, after
-- submission.received) travel as parallel arrays. The parameters are an acceptRow's
-- (acceptRow.args): an empty idempotency key, bound ($7) or unbound ($36, see
-- outbox.BindsIdempotencyKey), is NULL (NULLIF), and so is a delivery's locked_until or
-- sent_at whose flag is false.
WITH s AS (
	INSERT INTO submissions ({{SubmissionColumns}}, unbound_key)
	VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7::text, ''), $8, $9, $10, NULLIF($36::text, ''))
	ON CONFLICT DO NOTHING
	RETURNING id
), d AS (
	INSERT INTO deliveries ({{DeliveryColumns}})
	SELECT {{PlannedDeliveryValues}}
	FROM s, unnest($11::uuid[], $12::text[], $13::text[], $14::text[], $15::text[], $16::int[],
		$17::int[], $18::timestamptz[], $19::text[], $20::text[], $21::timestamptz[], $22::bool[],
		$23::text[], $24::text[], $25::text[], $26::text[], $27::timestamptz[], $28::timestamptz[],
		$29::timestamptz[], $30::bool[])
		AS d(id, {{PlannedDeliveryFields}})
), e AS (
	INSERT INTO events (kind, submission_id, data, at)
	SELECT $31, s.id, $32::json, $10 FROM s
	UNION ALL
	SELECT x.kind, s.id, x.data::json, x.at
	FROM s, unnest($33::text[], $34::text[], $35::timestamptz[]) AS x(kind, data, at)
)
SELECT id FROM s

-- name: AcceptSet
-- AcceptOne over a whole batch: one statement inserts every submission (array order, so
-- keyed ones keep sortKeyed's order), then the deliveries and events of those it
-- inserted. The server plans and runs one statement per group commit instead of one per
-- submission. ON CONFLICT DO NOTHING skips a duplicate, of a stored row or of an earlier
-- item of the same batch, and a skipped submission's id is missing from s, so none of its
-- deliveries or events are written. The columns are acceptColumns' (accept_set.go): as
-- in AcceptOne, an empty key (bound $7 or unbound $38) is NULL and so is a locked_until
-- or sent_at flagged false.
WITH s AS (
	INSERT INTO submissions ({{SubmissionColumns}}, unbound_key)
	SELECT x.id, x.form, x.status, x.reason, x.data::json, x.meta::json, NULLIF(x.key, ''), x.hash, x.test, x.created,
		NULLIF(x.unbound, '')
	FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::text[], $9::bool[], $10::timestamptz[], $38::text[])
		AS x(id, form, status, reason, data, meta, key, hash, test, created, unbound)
	ON CONFLICT DO NOTHING
	RETURNING id
), d AS (
	INSERT INTO deliveries ({{DeliveryColumns}})
	SELECT {{PlannedDeliveryValues}}
	FROM unnest($11::uuid[], $12::uuid[], $13::text[], $14::text[], $15::text[], $16::text[], $17::int[],
		$18::int[], $19::timestamptz[], $20::text[], $21::text[], $22::timestamptz[], $23::bool[],
		$24::text[], $25::text[], $26::text[], $27::text[], $28::timestamptz[], $29::timestamptz[],
		$30::timestamptz[], $31::bool[])
		AS d(sub, id, {{PlannedDeliveryFields}})
	JOIN s ON s.id = d.sub
), e AS (
	INSERT INTO events (kind, submission_id, data, at)
	SELECT $32::text, s.id, x.data::json, x.at
	FROM unnest($1::uuid[], $33::text[], $10::timestamptz[]) AS x(id, data, at) JOIN s ON s.id = x.id
	UNION ALL
	SELECT x.kind, s.id, x.data::json, x.at
	FROM unnest($34::uuid[], $35::text[], $36::text[], $37::timestamptz[]) AS x(sub, kind, data, at)
	JOIN s ON s.id = x.sub
)
SELECT id FROM s

-- name: FindDuplicate
-- What a duplicate collided with. It runs as its own statement after the insert so that
-- its snapshot sees a conflicting row that another transaction committed while the
-- insert waited for it. An empty bound key ($3) is none: only the id matches then. The
-- row with the item's own id comes first.
SELECT id, status, content_hash FROM submissions
	WHERE (form = $2 AND idempotency_key = NULLIF($3::text, '')) OR id = $1
	ORDER BY id = $1 DESC LIMIT 1
