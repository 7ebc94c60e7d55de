package storeflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// errDigestConflict rolls back a CreateDigest that found the period digested, or one of
// its submissions listed, by another closer.
var errDigestConflict = errors.New("digest conflict")

// CreateDigest writes d, its items, its deliveries and its digest.created event in one
// transaction; false, and nothing written, when the period is digested or one of
// d.Items is listed already (see outbox.DigestStore).
func CreateDigest(ctx context.Context, dr Driver, d outbox.Digest, deliveries []outbox.Delivery) (bool, error) {
	if len(d.Items) == 0 {
		return false, errors.New("create digest: no submissions")
	}
	planned := d.PlannedDeliveries(deliveries)
	err := dr.WriteTx(ctx, func(tx Tx) error {
		fresh, err := tx.InsertDigest(ctx, d)
		if err != nil {
			return fmt.Errorf("insert digest: %w", err)
		}
		if !fresh {
			return errDigestConflict
		}
		listed, err := tx.InsertDigestItems(ctx, d)
		if err != nil {
			return fmt.Errorf("insert digest items: %w", err)
		}
		if listed != len(d.Items) {
			return errDigestConflict
		}
		for i, del := range planned {
			if err := tx.InsertDelivery(ctx, del); err != nil {
				return fmt.Errorf("insert digest delivery %d: %w", i, err)
			}
		}
		data := d.Event.Data
		if len(data) == 0 {
			data = []byte("{}")
		}
		ev := outbox.Event{Kind: outbox.EventDigestCreated, SubmissionID: d.Items[0], Data: data, At: d.CreatedAt}
		if err := tx.InsertEvent(ctx, ev); err != nil {
			return fmt.Errorf("insert digest event: %w", err)
		}
		return nil
	})
	switch {
	case errors.Is(err, errDigestConflict):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("create digest %s/%s %s: %w", d.Form, d.Route, d.PeriodStart.Format(time.RFC3339), err)
	}
	return true, nil
}
