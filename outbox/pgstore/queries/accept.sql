-- name: PlannedDeliveryFields
-- The unnested delivery arrays of AcceptSet (after the ids), in
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

-- name: AcceptSet
-- The one accept statement: it inserts every submission of a batch (array order, so
-- keyed ones keep sortKeyed's order), then the deliveries and events of those it
-- inserted, and returns their ids. The server plans and runs one statement per group
-- commit instead of one per submission (AcceptBatch runs it once per item only to set
-- aside a bad one). ON CONFLICT DO NOTHING skips a duplicate, of a stored row or of an
-- earlier item of the same batch, and a skipped submission's id is missing from s, so
-- none of its deliveries or events are written; concurrent accepts of one key are safe,
-- since the insert waits for the first inserter to commit. The deliveries and the extra
-- events (sub.Events, after submission.received) travel as parallel arrays, each with
-- its submission's id. The columns are acceptColumns' (accept_set.go): an empty key
-- (bound $7 or unbound $38, see outbox.BindsIdempotencyKey) is NULL (NULLIF), and so is
-- a locked_until or sent_at whose flag is false.
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
	INSERT INTO events (kind, submission_id, delivery_id, data, at)
	SELECT $32::text, s.id, NULL::uuid, x.data::json, x.at
	FROM unnest($1::uuid[], $33::text[], $10::timestamptz[]) AS x(id, data, at) JOIN s ON s.id = x.id
	UNION ALL
	SELECT x.kind, s.id, NULLIF(x.del, '')::uuid, x.data::json, x.at
	FROM unnest($34::uuid[], $35::text[], $36::text[], $37::timestamptz[], $39::text[]) AS x(sub, kind, data, at, del)
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
