// Package completion prepares an outbox.Completion for storing. Both stores call Plan, so
// what Complete checks and fills in cannot drift between them.
package completion

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Plan checks c's status (sent, failed or dead) and fills what the caller may leave
// unset: Now (the present), NextAttemptAt, the attempt's StartedAt and FinishedAt (Now),
// and, when c carries an event, its data ("{}"), its delivery (c.DeliveryID) and its time
// (Now). An unset event submission stays unset: only the store knows the delivery's. The
// caller's event is copied, never changed.
func Plan(c outbox.Completion) (outbox.Completion, error) {
	switch c.Status {
	case outbox.DeliverySent, outbox.DeliveryFailed, outbox.DeliveryDead:
	default:
		return c, fmt.Errorf("complete delivery %s: status %q is not sent, failed or dead", c.DeliveryID, c.Status)
	}
	if c.Now.IsZero() {
		c.Now = time.Now()
	}
	c.NextAttemptAt = orTime(c.NextAttemptAt, c.Now)
	c.Attempt.StartedAt = orTime(c.Attempt.StartedAt, c.Now)
	c.Attempt.FinishedAt = orTime(c.Attempt.FinishedAt, c.Now)
	if c.Event != nil {
		e := *c.Event
		if len(e.Data) == 0 {
			e.Data = json.RawMessage("{}")
		}
		if e.DeliveryID == uuid.Nil {
			e.DeliveryID = c.DeliveryID
		}
		e.At = orTime(e.At, c.Now)
		c.Event = &e
	}
	return c, nil
}

func orTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}
