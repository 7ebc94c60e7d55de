-- The operator's inbox: its search, counts and audited actions (inbox.go).

-- name: SearchSubmissions
-- SearchSubmissions's head; inbox.go adds the conditions below that apply, then
-- SearchSubmissionsOrder and a LIMIT. Each $? is numbered when the query is built.
SELECT {{SubmissionColumns}} FROM submissions s

-- name: SearchSubmissionsOrder
ORDER BY s.created_at DESC, s.id DESC

-- name: FormIn
s.form = ANY($?)

-- name: SearchStatusIs
s.status = $?

-- name: SearchDeliveryDead
-- Unfinished deliveries are few and the status index finds them, so the membership
-- tests read that small set rather than every submission's deliveries.
s.id IN (SELECT d.submission_id FROM deliveries d WHERE d.status = 'dead')

-- name: SearchDeliveryPending
-- sending is an arm of its own: its rows are in deliveries_leased, not in the status
-- index (migrations/0008), and the planner combines indexes over OR arms only.
s.id IN (SELECT d.submission_id FROM deliveries d WHERE d.status IN ('pending', 'failed') OR d.status = 'sending')

-- name: SearchSince
s.created_at >= $?

-- name: SearchUntil
s.created_at < $?

-- name: SearchRawText
-- ILIKE folds more than ASCII case; the contract promises only ASCII. The ILIKE over
-- the stored text (json is kept as text) parses no JSON, several times cheaper per row,
-- and leaves SearchFieldValue only the rows it passes.
s.data::text ILIKE $? ESCAPE '\'

-- name: SearchFieldValue
-- The decoded field values (json_each_text), so that the search matches what the visitor
-- typed, not the JSON escapes.
EXISTS (SELECT 1 FROM json_each_text(s.data) j WHERE j.value ILIKE $? ESCAPE '\')

-- name: SearchBeforeCursor
(s.created_at, s.id) < ($?, $?)

-- name: SubmissionForms
-- The distinct forms, sorted. Each step seeks the next form greater than the last in the
-- index on (form, created_at, id), so it reads one index entry per form, where SELECT
-- DISTINCT would read every submission's.
WITH RECURSIVE f (form) AS (
		SELECT MIN(form) FROM submissions
		UNION ALL
		SELECT (SELECT MIN(s.form) FROM submissions s WHERE s.form > f.form) FROM f WHERE f.form IS NOT NULL
	)
	SELECT form FROM f WHERE form IS NOT NULL

-- name: OverviewSubmissions
-- A NULL form list is every form.
SELECT form, status, test,
		COUNT(*) FILTER (WHERE created_at >= $1), COUNT(*) FILTER (WHERE created_at >= $2), COUNT(*)
	FROM submissions WHERE $3::text[] IS NULL OR form = ANY($3)
	GROUP BY form, status, test ORDER BY form, status, test

-- name: OverviewDeliveries
-- The status index (pending, failed, dead) and deliveries_leased (sending) narrow these to
-- the few rows not sent or skipped; sending is an OR arm of its own so that the planner
-- combines the two (migrations/0008).
SELECT s.form, d.status, COUNT(*)
	FROM deliveries d JOIN submissions s ON s.id = d.submission_id
	WHERE (d.status IN ('pending', 'failed', 'dead') OR d.status = 'sending') AND ($1::text[] IS NULL OR s.form = ANY($1))
	GROUP BY s.form, d.status ORDER BY s.form, d.status

-- name: SubmissionEvents
SELECT id, kind, submission_id, delivery_id, data, at FROM events
	WHERE submission_id = $1 ORDER BY id

-- The actions' row locks (FOR UPDATE) serialize concurrent actions on one submission,
-- delivery or address.

-- name: ActRetryTarget
SELECT d.status, d.route, d.submission_id, s.form
	FROM deliveries d JOIN submissions s ON s.id = d.submission_id WHERE d.id = $1 FOR UPDATE OF d

-- name: ActRetry
UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = $2, updated_at = $2
	WHERE id = $1

-- name: ActSubmissionTarget
SELECT form, status, reason FROM submissions WHERE id = $1 FOR UPDATE

-- name: ActRelease
UPDATE submissions SET status = 'accepted', reason = '' WHERE id = $1

-- name: ActReleaseDeliveries
UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = $2, updated_at = $2
	WHERE submission_id = $1 AND status = 'skipped'

-- name: ActDuePayloads
-- The webhook deliveries a release just made due, whose body's status it rewrites.
SELECT id, payload FROM deliveries
	WHERE submission_id = $1 AND channel = 'webhook' AND status = 'pending'

-- name: ActSetPayload
UPDATE deliveries SET payload = $2 WHERE id = $1

-- name: ActMarkSpam
UPDATE submissions SET status = 'spam', reason = $2 WHERE id = $1

-- name: ActSkipDeliveries
-- A leased delivery is the worker's until its fenced write; the rest never goes.
UPDATE deliveries SET status = 'skipped', updated_at = $2
	WHERE submission_id = $1 AND status IN ('pending', 'failed', 'dead', 'parked')

-- name: ActErase
-- The submission and its deliveries, whose ids it returns: their attempts have no foreign
-- key (migrations/0008), DeleteAttempts removes them next. Files, feedback and the rest
-- go by cascade.
WITH d AS (DELETE FROM deliveries WHERE submission_id = $1 RETURNING id),
s AS (DELETE FROM submissions WHERE id = $1)
SELECT COALESCE(array_agg(id), '{}') FROM d

-- name: ActUnsuppressTarget
-- The delivery whose bounce or complaint listed the address, and its submission, when
-- they are still stored.
SELECT sp.reason, d.id, d.submission_id, COALESCE(s.form, '')
	FROM suppressions sp LEFT JOIN deliveries d ON d.id = sp.delivery_id
	LEFT JOIN submissions s ON s.id = d.submission_id WHERE sp.address = $1 FOR UPDATE OF sp
