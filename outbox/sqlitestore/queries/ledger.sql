-- The lead ledger (ledger.go; migration 0011). Days are UTC: a submission's day is the
-- whole number of days since the epoch of its created_at (unix microseconds).

-- name: RecordLedger
-- Cumulative counts: keep the greatest, so a repeated flush adds nothing.
INSERT INTO ledger_counts (day, form, instance, answered, spooled, replayed, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (day, form, instance) DO UPDATE SET
		answered = max(ledger_counts.answered, excluded.answered),
		spooled = max(ledger_counts.spooled, excluded.spooled),
		replayed = max(ledger_counts.replayed, excluded.replayed),
		updated_at = excluded.updated_at

-- name: LedgerCounts
SELECT day, form, sum(answered), sum(spooled), sum(replayed)
	FROM ledger_counts WHERE day >= ? AND day < ?
	GROUP BY day, form

-- name: LedgerSubmissions
-- The range of submissions_created_at.
SELECT created_at / 86400000000, form, status, count(*)
	FROM submissions WHERE created_at >= ? AND created_at < ? AND test = 0
	GROUP BY 1, 2, 3

-- name: LedgerDeliveries
-- The same range, each submission's deliveries through their unique index's
-- (submission_id, ...) prefix.
SELECT s.created_at / 86400000000, s.form, d.route, d.status, count(*)
	FROM submissions s JOIN deliveries d ON d.submission_id = s.id
	WHERE s.created_at >= ? AND s.created_at < ? AND s.test = 0
	GROUP BY 1, 2, 3, 4

-- name: LedgerUndelivered
-- Accepted submissions that were routed and have no delivery but autoreplies. An
-- unrouted one is left out: by its reason (no_route_matched), or, for a held-back post
-- released later (the release clears the reason), by its submission.unrouted event; the
-- events_submission index answers that for the few rows the first test leaves.
SELECT s.created_at / 86400000000, s.form, count(*)
	FROM submissions s
	WHERE s.created_at >= ? AND s.created_at < ? AND s.test = 0
		AND s.status = 'accepted' AND s.reason <> 'no_route_matched'
		AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.submission_id = s.id AND d.channel <> 'autoreply')
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.submission_id = s.id AND e.kind = 'submission.unrouted')
	GROUP BY 1, 2

-- name: LedgerErased
-- Erasures since from: the events_kind index; erasures are few.
SELECT submission_id, data, at FROM events WHERE kind = 'submission.erased' AND at >= ?

-- name: PruneLedger
-- Retention (outbox/retention.go): the counts of days its cutoff passed. A few rows per
-- form, day and instance: no batching.
DELETE FROM ledger_counts WHERE day < ?
