package outbox

import (
	"context"
	"fmt"
	"time"
)

// ParkedAlerts is the AlertSource of parked destinations: one AlertDestinationParked
// condition per parked destination, keyed by its destination key, while it is parked.
// The alert opens when a destination parks and resolves when it is unparked (a probe got
// through, or an operator). The condition names the channel and the destination, so the
// alert never travels through what is failing, and counts the leads held. It is one read
// of the destinations table with counts from the deliveries_parked index.
func ParkedAlerts(s DestinationStore) AlertSource {
	return AlertSourceFunc{SourceName: "parked destinations", Func: func(ctx context.Context, _ time.Time) ([]AlertCondition, error) {
		list, err := s.ListParkedDestinations(ctx)
		if err != nil {
			return nil, fmt.Errorf("parked destinations alert: %w", err)
		}
		out := make([]AlertCondition, 0, len(list))
		for _, p := range list {
			out = append(out, AlertCondition{
				Kind:        AlertDestinationParked,
				Key:         p.Key,
				Summary:     parkedSummary(p),
				Affected:    p.Leads,
				Channel:     string(p.Channel),
				Destination: p.Key,
				Since:       p.ParkedAt,
			})
		}
		return out, nil
	}}
}

// parkedSummary is one line for a person: the label and the reason carry no secret and
// no visitor data (destination.go, parking.go).
func parkedSummary(p ParkedDestination) string {
	how := "parked after " + p.Reason
	if p.Manual {
		how = "parked by an operator"
	}
	return fmt.Sprintf("%s is %s: %d deliveries of %d leads are held until it is unparked (key %s)",
		p.Label, how, p.Held, p.Leads, p.Key)
}
