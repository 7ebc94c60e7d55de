package outbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Parker parks and unparks destinations by hand (the inbox, the CLI, the admin API).
// The Worker is one: it also updates its own copy of the parked set at once.
type Parker interface {
	// ParkDestination parks dest by hand: its deliveries are held as they come due and no
	// probe runs. It reports whether dest was not parked before. by names the operator
	// in the destination.parked event.
	ParkDestination(ctx context.Context, dest Destination, by string) (bool, error)
	// UnparkDestination unparks key and resumes its held deliveries in created order,
	// saying how many; ErrNotParked when key is not parked.
	UnparkDestination(ctx context.Context, key, by string) (int, error)
}

// StoreParker is a Parker over a store alone, for a process without a worker of its
// own; the workers learn of its changes when they next read the parked set.
type StoreParker struct {
	Store DestinationStore
	Now   func() time.Time // default time.Now
}

func (p StoreParker) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// ParkDestination implements Parker.
func (p StoreParker) ParkDestination(ctx context.Context, dest Destination, by string) (bool, error) {
	return p.Store.ParkDestination(ctx, Park{Destination: dest, Reason: "manual", Manual: true, By: by, Now: p.now()})
}

// UnparkDestination implements Parker.
func (p StoreParker) UnparkDestination(ctx context.Context, key, by string) (int, error) {
	return p.Store.UnparkDestination(ctx, key, uuid.Nil, by, p.now())
}

// maxKeyLen bounds a destination key read from an operator.
const maxKeyLen = 200

// ParseDestinationKey reads a destination key an operator typed ("webhook:<hash>",
// "telegram:<chat id>", "email:<providers>", ...; see DestinationOf) into the
// Destination it names. The label is made from the key: a hash names no host.
func ParseDestinationKey(key string) (Destination, error) {
	ch, rest, ok := strings.Cut(key, ":")
	c := Channel(ch)
	if !ok || rest == "" || len(key) > maxKeyLen || strings.ContainsFunc(key, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return Destination{}, fmt.Errorf("destination key %q: want CHANNEL:ID, e.g. webhook:3f2a9c0d1e2b4a5c or telegram:-1001234", key)
	}
	switch {
	case c == ChannelEmail:
		return Destination{Key: key, Channel: c, Label: "e-mail via " + rest}, nil
	case c == ChannelTelegram:
		return Destination{Key: key, Channel: c, Label: "Telegram chat " + rest}, nil
	case c == ChannelWebhook || c.IsChat():
		if len(rest) != destinationHashLen || strings.Trim(rest, "0123456789abcdef") != "" {
			return Destination{}, fmt.Errorf("destination key %q: a %s key ends in %d hex digits (see the parked destinations list or a delivery's destination)", key, c, destinationHashLen)
		}
		return Destination{Key: key, Channel: c, Label: string(c) + " #" + rest[:6]}, nil
	}
	return Destination{}, fmt.Errorf("destination key %q: unknown channel %q", key, ch)
}

var (
	_ Parker = (*Worker)(nil)
	_ Parker = StoreParker{}
)
