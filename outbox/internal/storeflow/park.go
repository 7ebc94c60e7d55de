package storeflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// ParkDriver is one store's way into a write transaction for the parking sequences
// (outbox.DestinationStore), over the statements of its queries/park.sql.
type ParkDriver interface {
	ParkTx(ctx context.Context, fn func(ParkTx) error) error
}

// ParkTx is one dialect's parking statements, inside the transaction ParkTx opened.
type ParkTx interface {
	// Destination is the parked destination key, locked for the transaction;
	// outbox.ErrNotFound when key is not parked.
	Destination(ctx context.Context, key string) (outbox.ParkedDestination, error)
	// InsertDestination parks p's destination; false when it was parked already.
	InsertDestination(ctx context.Context, p outbox.Park) (bool, error)
	// MakeManual turns a park into a manual one: no probe any more.
	MakeManual(ctx context.Context, key string) error
	// DeleteDestination unparks key.
	DeleteDestination(ctx context.Context, key string) error
	// SetProbe records the probe delivery and when the next probe may start.
	SetProbe(ctx context.Context, key string, probe uuid.UUID, at time.Time, interval time.Duration) error
	// HoldDelivery parks a delivery still sending under token, under key: status parked,
	// attempts less the one its claim charged, lease cleared, last error and provider set
	// when not empty. False when the lease is gone.
	HoldDelivery(ctx context.Context, id uuid.UUID, token, key, lastError, provider string, now time.Time) (bool, error)
	// InsertAttempt records a of a delivery HoldDelivery just held, numbered past its
	// history.
	InsertAttempt(ctx context.Context, a outbox.Attempt) error
	// OldestParked is the first-created delivery parked under key; outbox.ErrNotFound
	// when none is.
	OldestParked(ctx context.Context, key string) (uuid.UUID, error)
	// MakeDue makes one parked delivery pending, due at now.
	MakeDue(ctx context.Context, id uuid.UUID, now time.Time) error
	// ResumeParked makes every delivery parked under key pending, due at now, and says
	// how many.
	ResumeParked(ctx context.Context, key string, now time.Time) (int, error)
	// InsertEvent stores e (Tx.InsertEvent's statement).
	InsertEvent(ctx context.Context, e outbox.Event) error
}

// parkEvent is the data of destination.parked and destination.unparked: no secret (keys
// and labels carry none) and no visitor data.
type parkEvent struct {
	Key     string `json:"key"`
	Channel string `json:"channel,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Manual  bool   `json:"manual,omitempty"`
	Resumed *int   `json:"resumed,omitempty"`
	By      string `json:"by,omitempty"`
}

func insertParkEvent(ctx context.Context, tx ParkTx, kind string, data parkEvent, at time.Time) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return tx.InsertEvent(ctx, outbox.Event{Kind: kind, Data: b, At: at})
}

// Park parks p.Destination (outbox.DestinationStore.ParkDestination).
func Park(ctx context.Context, d ParkDriver, p outbox.Park) (bool, error) {
	var parked bool
	err := d.ParkTx(ctx, func(tx ParkTx) error {
		ok, err := tx.InsertDestination(ctx, p)
		if err != nil {
			return err
		}
		parked = ok
		if !ok && p.Manual {
			return tx.MakeManual(ctx, p.Destination.Key)
		}
		if !ok {
			return nil
		}
		return insertParkEvent(ctx, tx, outbox.EventDestinationParked, parkEvent{Key: p.Destination.Key,
			Channel: string(p.Destination.Channel), Reason: p.Reason, Manual: p.Manual, By: p.By}, p.Now)
	})
	if err != nil {
		return false, fmt.Errorf("park destination %s: %w", p.Destination.Key, err)
	}
	return parked, nil
}

// Hold parks one leased delivery under a parked destination
// (outbox.DestinationStore.HoldDelivery).
func Hold(ctx context.Context, d ParkDriver, h outbox.Hold) error {
	err := d.ParkTx(ctx, func(tx ParkTx) error {
		dest, err := tx.Destination(ctx, h.Key)
		if errors.Is(err, outbox.ErrNotFound) {
			return outbox.ErrNotParked
		}
		if err != nil {
			return err
		}
		probe := dest.ProbeID != uuid.Nil && dest.ProbeID == h.DeliveryID
		if probe && h.Attempt == nil {
			// The claimed probe: the caller sends it.
			return outbox.ErrNotParked
		}
		provider := ""
		if h.Attempt != nil {
			provider = h.Attempt.Provider
		}
		ok, err := tx.HoldDelivery(ctx, h.DeliveryID, h.LeaseToken, h.Key, h.LastError, provider, h.Now)
		if err != nil {
			return err
		}
		if !ok {
			return outbox.ErrLeaseLost
		}
		if h.Attempt != nil {
			if err := tx.InsertAttempt(ctx, *h.Attempt); err != nil {
				return err
			}
		}
		if probe && !dest.Manual {
			next := dest.ProbeInterval * 2
			if h.ProbeMax > 0 {
				next = min(next, h.ProbeMax)
			}
			return tx.SetProbe(ctx, h.Key, uuid.Nil, h.Now.Add(next), next)
		}
		return nil
	})
	if err != nil && !errors.Is(err, outbox.ErrNotParked) && !errors.Is(err, outbox.ErrLeaseLost) {
		return fmt.Errorf("hold delivery %s: %w", h.DeliveryID, err)
	}
	return err
}

// StartProbe makes the oldest parked delivery of key its probe when the probe is due
// (outbox.DestinationStore.StartProbe).
func StartProbe(ctx context.Context, d ParkDriver, key string, now time.Time, guard time.Duration) (uuid.UUID, error) {
	var id uuid.UUID
	err := d.ParkTx(ctx, func(tx ParkTx) error {
		dest, err := tx.Destination(ctx, key)
		if errors.Is(err, outbox.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if dest.Manual || dest.ProbeAt.IsZero() || dest.ProbeAt.After(now) {
			return nil
		}
		first, err := tx.OldestParked(ctx, key)
		if errors.Is(err, outbox.ErrNotFound) {
			// Nothing held (the probe is out, or every lead was erased): look again an
			// interval later, so that no worker asks on every pass.
			return tx.SetProbe(ctx, key, dest.ProbeID, now.Add(dest.ProbeInterval), dest.ProbeInterval)
		}
		if err != nil {
			return err
		}
		if err := tx.MakeDue(ctx, first, now); err != nil {
			return err
		}
		id = first
		return tx.SetProbe(ctx, key, first, now.Add(max(guard, dest.ProbeInterval)), dest.ProbeInterval)
	})
	if err != nil {
		return uuid.Nil, fmt.Errorf("start probe of %s: %w", key, err)
	}
	return id, nil
}

// Unpark unparks key and resumes its parked deliveries
// (outbox.DestinationStore.UnparkDestination).
func Unpark(ctx context.Context, d ParkDriver, key string, probe uuid.UUID, by string, now time.Time) (int, error) {
	var n int
	err := d.ParkTx(ctx, func(tx ParkTx) error {
		dest, err := tx.Destination(ctx, key)
		if errors.Is(err, outbox.ErrNotFound) {
			return outbox.ErrNotParked
		}
		if err != nil {
			return err
		}
		if probe != uuid.Nil && (dest.Manual || dest.ProbeID != probe) {
			return outbox.ErrNotParked
		}
		if err := tx.DeleteDestination(ctx, key); err != nil {
			return err
		}
		if n, err = tx.ResumeParked(ctx, key, now); err != nil {
			return err
		}
		return insertParkEvent(ctx, tx, outbox.EventDestinationUnparked, parkEvent{Key: key, Resumed: &n, By: by}, now)
	})
	if err != nil && !errors.Is(err, outbox.ErrNotParked) {
		return 0, fmt.Errorf("unpark destination %s: %w", key, err)
	}
	return n, err
}
