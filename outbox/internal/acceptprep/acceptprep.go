// Package acceptprep encodes a submission for storing, the same way in both stores,
// before Accept touches the database.
package acceptprep

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/internal/jsonw"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Prepared is what Accept encodes from the submission.
type Prepared struct {
	Created time.Time // sub.CreatedAt, or the present when unset
	Data    []byte    // sub.Data as JSON ({} when nil)
	Meta    []byte    // sub.Meta as JSON
	Event   []byte    // the submission.received event's data: form, status and signals
	// BoundKey is sub's idempotency key when its status binds it (the column with the
	// unique (form, key) constraint), UnboundKey when it does not (kept for audit only);
	// the other one is empty. Both are empty without a key.
	BoundKey, UnboundKey string
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
	if sub.Data != nil {
		p.Data = sub.Data.AppendJSON(make([]byte, 0, 64*len(sub.Data)))
	}
	if outbox.BindsIdempotencyKey(sub.Status) {
		p.BoundKey = sub.IdempotencyKey
	} else {
		p.UnboundKey = sub.IdempotencyKey
	}
	p.Meta = sub.Meta.AppendJSON(nil)
	ev := jsonw.NewObject(make([]byte, 0, 48+len(sub.Form)))
	ev.String("form", sub.Form)
	ev.String("status", string(sub.Status))
	if len(sub.Signals) > 0 {
		// The signals ride on the event every submission writes anyway: no row of
		// their own on intake's hot path (outbox.ReceivedSignals reads them back).
		sig, err := json.Marshal(sub.Signals)
		if err != nil {
			return Prepared{}, fmt.Errorf("accept submission: encode signals: %w", err)
		}
		ev.Raw("score", strconv.AppendInt(nil, int64(outbox.Score(sub.Signals)), 10))
		ev.Raw("signals", sig)
	}
	p.Event = ev.Close()
	return p, nil
}
