package adminapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The parked destinations (docs/operations.md, "Parked destinations"):
//
//	GET  /form_outbox/destinations                  the parked ones, oldest park first
//	POST /form_outbox/destinations/park?key=KEY     park by hand (no probe)
//	POST /form_outbox/destinations/unpark?key=KEY   unpark: held deliveries resume in order
//
// Keys carry no secret (outbox/destination.go), so they may travel in the URL that
// Caddy's admin server logs.

// adminActor names the admin API (and the CLI through it) in park and unpark events:
// Caddy's admin endpoint has no user of its own.
const adminActor = "admin API"

// Destination is a parked destination in the admin API's answers.
type Destination struct {
	Key     string    `json:"key"`
	Channel string    `json:"channel"`
	Label   string    `json:"label"`
	Reason  string    `json:"reason"`
	Manual  bool      `json:"manual"`
	Since   time.Time `json:"parked_at"`
	// NextProbe is when the next probe may start; absent for a manual park.
	NextProbe *time.Time `json:"next_probe_at,omitempty"`
	Held      int        `json:"held"`
	Leads     int        `json:"leads"`
}

// Destinations is the body of GET /form_outbox/destinations.
type Destinations struct {
	Destinations []Destination `json:"destinations"`
}

// NewDestination is the admin view of a parked destination.
func NewDestination(p outbox.ParkedDestination) Destination {
	v := Destination{Key: p.Key, Channel: string(p.Channel), Label: p.Label, Reason: p.Reason, Manual: p.Manual,
		Since: p.ParkedAt, Held: p.Held, Leads: p.Leads}
	if !p.Manual && !p.ProbeAt.IsZero() {
		at := p.ProbeAt
		v.NextProbe = &at
	}
	return v
}

func serveListDestinations(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	if err := onlyParams(r.URL.Query()); err != nil {
		return err
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	list, err := b.Store().ListParkedDestinations(ctx)
	if err != nil {
		return storeError(err)
	}
	out := Destinations{Destinations: make([]Destination, 0, len(list))}
	for _, p := range list {
		out.Destinations = append(out.Destinations, NewDestination(p))
	}
	return writeJSON(w, http.StatusOK, out)
}

// destinationKey reads the key parameter of a park or unpark.
func destinationKey(r *http.Request) (outbox.Destination, error) {
	q := r.URL.Query()
	if err := onlyParams(q, "key"); err != nil {
		return outbox.Destination{}, err
	}
	dest, err := outbox.ParseDestinationKey(q.Get("key"))
	if err != nil {
		return dest, apiError(http.StatusBadRequest, err)
	}
	return dest, nil
}

func serveParkDestination(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	dest, err := destinationKey(r)
	if err != nil {
		return err
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	fresh, err := b.Parker().ParkDestination(ctx, dest, adminActor)
	if err != nil {
		return storeError(err)
	}
	result := "parked"
	if !fresh {
		result = "already parked"
	}
	b.Logger().Info("destination parked by admin request", zap.String("destination", dest.Key))
	return writeJSON(w, http.StatusOK, map[string]string{"key": dest.Key, "result": result})
}

func serveUnparkDestination(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	dest, err := destinationKey(r)
	if err != nil {
		return err
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	n, err := b.Parker().UnparkDestination(ctx, dest.Key, adminActor)
	if errors.Is(err, outbox.ErrNotParked) {
		return apiError(http.StatusNotFound, err)
	}
	if err != nil {
		return storeError(err)
	}
	b.Logger().Info("destination unparked by admin request", zap.String("destination", dest.Key), zap.Int("resumed", n))
	return writeJSON(w, http.StatusOK, map[string]any{"key": dest.Key, "result": "unparked", "resumed": n})
}
