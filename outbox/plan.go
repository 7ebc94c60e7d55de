package outbox

import (
	"time"

	"github.com/google/uuid"
)

// PlannedDelivery completes a delivery of sub for storing: its submission id, and, where
// the caller left them unset, a UUIDv7, the status that follows from the submission's
// (pending when accepted, skipped otherwise: spam and quarantine are never sent until
// released) and the timestamps, due at creation. Both stores call it, so what Accept
// fills in cannot drift between them.
func PlannedDelivery(sub *Submission, d Delivery, created time.Time) Delivery {
	if d.ID == uuid.Nil {
		d.ID = uuid.Must(uuid.NewV7())
	}
	d.SubmissionID = sub.ID
	if d.Status == "" {
		d.Status = DeliveryPending
		if sub.Status != SubmissionAccepted {
			d.Status = DeliverySkipped
		}
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = created
	}
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = d.CreatedAt
	}
	if d.NextAttemptAt.IsZero() {
		d.NextAttemptAt = d.CreatedAt
	}
	return d
}
