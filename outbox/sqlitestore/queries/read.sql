-- name: GetSubmission
SELECT {{SubmissionSelect}} FROM submissions WHERE id = ?

-- name: GetDelivery
SELECT {{DeliveryColumns}} FROM deliveries WHERE id = ?

-- name: ListDeliveries
SELECT {{DeliveryColumns}} FROM deliveries
	WHERE submission_id = ? ORDER BY route, recipient

-- name: ListAttempts
SELECT {{AttemptColumns}} FROM delivery_attempts
	WHERE delivery_id = ? ORDER BY attempt

-- name: ListEvents
-- Every kind when the kind is ''; a limit of -1 is none.
SELECT id, kind, submission_id, delivery_id, data, at FROM events
	WHERE ? = '' OR kind = ? ORDER BY id DESC LIMIT ?
