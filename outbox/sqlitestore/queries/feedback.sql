-- Post-send feedback and the suppression list (feedback.go).

-- name: FeedbackDeliveryByID
-- The delivery a report names by id. The single writer connection serializes the
-- feedback transactions, so no row lock is needed.
SELECT {{DeliveryColumns}} FROM deliveries WHERE id = ? AND channel IN ('email', 'autoreply')

-- name: FeedbackDeliveryByMessageID
-- The delivery a report names by the provider's message id (email and autoreply deliveries only).
SELECT {{DeliveryColumns}} FROM deliveries
	WHERE provider_message_id = ? AND channel IN ('email', 'autoreply') LIMIT 1

-- name: ForgetOldReceipts
DELETE FROM feedback_receipts WHERE received_at < ?

-- name: InsertReceipt
INSERT INTO feedback_receipts (source, receipt_id, received_at)
	VALUES (?, ?, ?) ON CONFLICT DO NOTHING

-- name: InsertFeedback
INSERT INTO delivery_feedback (delivery_id, source, kind, bounce_type, diagnostic,
		provider_message_id, receipt_id, occurred_at, received_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: BounceDelivery
-- A hard bounce makes a sent delivery dead.
UPDATE deliveries SET status = 'dead', last_error = ?, updated_at = ?
	WHERE id = ? AND status = 'sent'

-- name: InsertEvent
INSERT INTO events (kind, submission_id, delivery_id, data, at) VALUES (?, ?, ?, ?, ?)

-- name: ListFeedback
SELECT delivery_id, source, kind, bounce_type, diagnostic, provider_message_id, receipt_id,
		occurred_at, received_at
	FROM delivery_feedback WHERE delivery_id = ? ORDER BY id

-- name: InsertSuppression
-- An address already listed keeps its first reason.
INSERT INTO suppressions (address, reason, delivery_id, created_at)
	VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING

-- name: DeleteSuppression
DELETE FROM suppressions WHERE address = ?

-- name: ListSuppressions
SELECT address, reason, delivery_id, created_at FROM suppressions
	ORDER BY created_at DESC, address LIMIT ?

-- name: IsSuppressed
SELECT 1 FROM suppressions WHERE address = ?
