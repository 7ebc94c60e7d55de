-- name: GetSubmission
SELECT {{SubmissionSelect}} FROM submissions WHERE id = $1

-- name: GetDelivery
SELECT {{DeliveryColumns}} FROM deliveries WHERE id = $1

-- name: ListDeliveries
SELECT {{DeliveryColumns}} FROM deliveries
	WHERE submission_id = $1 ORDER BY route COLLATE "C", recipient COLLATE "C"

-- name: ListAttempts
SELECT {{AttemptColumns}} FROM delivery_attempts
	WHERE delivery_id = $1 ORDER BY attempt

-- name: ListEvents
-- Every kind when the kind is ''; a NULL limit is none.
SELECT id, kind, submission_id, delivery_id, data, at FROM events
	WHERE $1 = '' OR kind = $1 ORDER BY id DESC LIMIT $2
