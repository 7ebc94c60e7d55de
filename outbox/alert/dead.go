package alert

import (
	"context"
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// DeadDeliveries is the delivery_dead source: one condition per (form, route) with dead
// deliveries not retried yet, keyed "form/route", its channel the route's (the alert
// goes elsewhere), its Affected the submissions concerned. It resolves when every dead
// delivery of the route is retried (or erased). The alerts' own form is left out: a
// notice that dies is logged and counted by the App, and never alerts about itself.
func DeadDeliveries(store outbox.AlertStore) outbox.AlertSource {
	return outbox.AlertSourceFunc{SourceName: outbox.AlertDeliveryDead, Func: func(ctx context.Context, _ time.Time) ([]outbox.AlertCondition, error) {
		groups, err := store.DeadDeliveryGroups(ctx, outbox.AlertsForm)
		if err != nil {
			return nil, err
		}
		out := make([]outbox.AlertCondition, 0, len(groups))
		for _, g := range groups {
			noun := "submissions"
			if g.Submissions == 1 {
				noun = "submission"
			}
			out = append(out, outbox.AlertCondition{
				Kind:     outbox.AlertDeliveryDead,
				Key:      g.Form + "/" + g.Route,
				Summary:  fmt.Sprintf("route %s of form %s (%s) gave up on %d %s; retry them once the cause is fixed", g.Route, g.Form, g.Channel, g.Submissions, noun),
				Affected: g.Submissions,
				Form:     g.Form,
				Channel:  string(g.Channel),
				Since:    g.Since,
			})
		}
		return out, nil
	}}
}
