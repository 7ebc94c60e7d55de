-- Post-send feedback and the suppression list (feedback.go).

-- name: FeedbackDeliveryByID
-- The delivery a report names by id, locked for the rest of the transaction.
SELECT {{DeliveryColumns}} FROM deliveries
	WHERE id = $1 AND channel IN ('email', 'autoreply') FOR UPDATE

-- name: FeedbackDeliveryByMessageID
-- The delivery a report names by the provider's message id (email and autoreply deliveries only).
SELECT {{DeliveryColumns}} FROM deliveries
	WHERE provider_message_id = $1 AND channel IN ('email', 'autoreply') LIMIT 1 FOR UPDATE

-- name: ForgetOldReceipts
DELETE FROM feedback_receipts WHERE received_at < $1

-- name: InsertReceipt
-- The receipt's primary key makes two instances receiving the same message at once
-- safe: the second insert waits for the first transaction, then finds the conflict and
-- inserts nothing.
INSERT INTO feedback_receipts (source, receipt_id, received_at)
	VALUES ($1, $2, $3) ON CONFLICT DO NOTHING

-- name: InsertFeedback
INSERT INTO delivery_feedback (delivery_id, source, kind, bounce_type, diagnostic,
		provider_message_id, receipt_id, occurred_at, received_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)

-- name: BounceDelivery
-- A hard bounce makes a sent delivery dead.
UPDATE deliveries SET status = 'dead', last_error = $1, updated_at = $2
	WHERE id = $3 AND status = 'sent'

-- name: InsertEvent
INSERT INTO events (kind, submission_id, delivery_id, data, at) VALUES ($1, $2, $3, $4, $5)

-- name: ListFeedback
SELECT delivery_id, source, kind, bounce_type, diagnostic, provider_message_id, receipt_id,
		occurred_at, received_at
	FROM delivery_feedback WHERE delivery_id = $1 ORDER BY id

-- name: InsertSuppression
-- An address already listed keeps its first reason.
INSERT INTO suppressions (address, reason, delivery_id, created_at)
	VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING

-- name: DeleteSuppression
DELETE FROM suppressions WHERE address = $1

-- name: ListSuppressions
SELECT address, reason, delivery_id, created_at FROM suppressions
	ORDER BY created_at DESC, address LIMIT $1

-- name: IsSuppressed
SELECT EXISTS (SELECT 1 FROM suppressions WHERE address = $1)
