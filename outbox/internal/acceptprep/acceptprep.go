// Package acceptprep encodes a submission for storing, the same way in both stores,
// before Accept touches the database.
package acceptprep

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Prepared is what Accept encodes from the submission.
type Prepared struct {
	Created time.Time // sub.CreatedAt, or the present when unset
	Data    []byte    // sub.Data as JSON ({} when nil)
	Meta    []byte    // sub.Meta as JSON
	Event   []byte    // the submission.received event's data: form and status
}

// Prepare checks that sub has an id and encodes it.
func Prepare(sub *outbox.Submission) (Prepared, error) {
	if sub == nil || sub.ID == uuid.Nil {
		return Prepared{}, errors.New("accept submission: missing submission id")
	}
	p := Prepared{Created: sub.CreatedAt, Data: []byte("{}")}
	if p.Created.IsZero() {
		p.Created = time.Now()
	}
	var err error
	if sub.Data != nil {
		if p.Data, err = json.Marshal(sub.Data); err != nil {
			return p, fmt.Errorf("accept submission %s: data: %w", sub.ID, err)
		}
	}
	if p.Meta, err = json.Marshal(sub.Meta); err != nil {
		return p, fmt.Errorf("accept submission %s: meta: %w", sub.ID, err)
	}
	if p.Event, err = json.Marshal(map[string]string{"form": sub.Form, "status": string(sub.Status)}); err != nil {
		return p, fmt.Errorf("accept submission %s: event: %w", sub.ID, err)
	}
	return p, nil
}
