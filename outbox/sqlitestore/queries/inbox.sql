-- The operator's inbox: its search, counts and audited actions (inbox.go).

-- name: SearchSubmissions
-- SearchSubmissions's head; inbox.go adds the conditions below that apply, then
-- SearchSubmissionsOrder.
SELECT {{SubmissionColumns}} FROM submissions s

-- name: SearchSubmissionsOrder
ORDER BY s.created_at DESC, s.id DESC LIMIT ?

-- name: FormIn
-- SQLite has no array parameter: inbox.go writes one ? per form into the parentheses.
s.form IN (?)

-- name: SearchStatusIs
s.status = ?

-- name: SearchDeliveryDead
-- Unfinished deliveries are few and the status index finds them, so the membership
-- tests read that small set rather than every submission's deliveries.
s.id IN (SELECT d.submission_id FROM deliveries d WHERE d.status = 'dead')

-- name: SearchDeliveryPending
s.id IN (SELECT d.submission_id FROM deliveries d WHERE d.status IN ('pending', 'failed', 'sending'))

-- name: SearchSince
s.created_at >= ?

-- name: SearchUntil
s.created_at < ?

-- name: SearchRawText
-- The LIKE over the stored text reads no JSON, several times cheaper per row than
-- json_each, and leaves SearchFieldValue only the few rows it passes.
s.data LIKE ? ESCAPE '\'

-- name: SearchFieldValue
-- The decoded field values (json_each), so that a value stored with JSON escapes
-- (\u003c for <) is still found by what the visitor typed.
EXISTS (SELECT 1 FROM json_each(s.data) j WHERE j.value LIKE ? ESCAPE '\')

-- name: SearchBeforeCursor
-- The range comes first and alone: written as one OR, SQLite plans it as two index
-- searches merged and sorted, reading every row older than the cursor (1.6 s at page
-- 101 of a million rows); as a range plus a filter it reads one page. The cursor's time
-- twice, then its id.
s.created_at <= ? AND (s.created_at < ? OR s.id < ?)

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
-- inbox.go adds " AND " FormIn when the forms are limited, then OverviewSubmissionsGroup.
SELECT s.form, s.status, s.test, SUM(s.created_at >= ?), SUM(s.created_at >= ?), COUNT(*)
	FROM submissions s WHERE 1 = 1

-- name: OverviewSubmissionsGroup
GROUP BY s.form, s.status, s.test ORDER BY s.form, s.status, s.test

-- name: OverviewDeliveries
-- The status index narrows these to the few rows not sent or skipped. inbox.go adds
-- " AND " FormIn when the forms are limited, then OverviewDeliveriesGroup.
SELECT s.form, d.status, COUNT(*)
	FROM deliveries d JOIN submissions s ON s.id = d.submission_id
	WHERE d.status IN ('pending', 'sending', 'failed', 'dead')

-- name: OverviewDeliveriesGroup
GROUP BY s.form, d.status ORDER BY s.form, d.status

-- name: SubmissionEvents
SELECT id, kind, submission_id, delivery_id, data, at FROM events
	WHERE submission_id = ? ORDER BY id

-- The actions run on the single writer connection, which serializes them.

-- name: ActRetryTarget
SELECT d.status, d.route, d.submission_id, s.form
	FROM deliveries d JOIN submissions s ON s.id = d.submission_id WHERE d.id = ?

-- name: ActRetry
-- ?1 now, ?2 id.
UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?1, updated_at = ?1
	WHERE id = ?2

-- name: ActSubmissionTarget
SELECT form, status, reason FROM submissions WHERE id = ?

-- name: ActRelease
UPDATE submissions SET status = 'accepted', reason = '' WHERE id = ?

-- name: ActReleaseDeliveries
-- ?1 now, ?2 submission id.
UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?1, updated_at = ?1
	WHERE submission_id = ?2 AND status = 'skipped'

-- name: ActDuePayloads
-- The webhook deliveries a release just made due, whose body's status it rewrites.
SELECT id, payload FROM deliveries
	WHERE submission_id = ?1 AND channel = 'webhook' AND status = 'pending'

-- name: ActSetPayload
UPDATE deliveries SET payload = ?2 WHERE id = ?1

-- name: ActMarkSpam
UPDATE submissions SET status = 'spam', reason = ? WHERE id = ?

-- name: ActSkipDeliveries
-- A leased delivery is the worker's until its fenced write; the rest never goes. ?1
-- now, ?2 submission id.
UPDATE deliveries SET status = 'skipped', updated_at = ?1
	WHERE submission_id = ?2 AND status IN ('pending', 'failed', 'dead', 'parked')

-- name: ActErase
-- Deliveries and attempts go by cascade.
DELETE FROM submissions WHERE id = ?

-- name: ActUnsuppressTarget
-- The delivery whose bounce or complaint listed the address, and its submission, when
-- they are still stored.
SELECT sp.reason, COALESCE(d.id, ''), COALESCE(d.submission_id, ''), COALESCE(s.form, '')
	FROM suppressions sp LEFT JOIN deliveries d ON d.id = sp.delivery_id
	LEFT JOIN submissions s ON s.id = d.submission_id WHERE sp.address = ?
