package canary

import (
	"context"
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// AlertSource reports outbox.AlertCanaryFailed for every route of forms whose last
// canary failed, keyed "form/route", with the route's channel (an alert about a failing
// webhook must not travel by that webhook). The condition holds until a later canary of
// the route passes. It reads one small table (a row per route) per poll. A route that is
// no longer in forms (removed from the config) is not reported, whatever its last
// verdict.
func AlertSource(store outbox.CanaryStore, forms []Form) outbox.AlertSource {
	watched := map[string]bool{}
	for _, f := range forms {
		for _, r := range f.Routes {
			watched[f.Name+"/"+r] = true
		}
	}
	return outbox.AlertSourceFunc{SourceName: "canary", Func: func(ctx context.Context, _ time.Time) ([]outbox.AlertCondition, error) {
		results, err := store.CanaryResults(ctx)
		if err != nil {
			return nil, fmt.Errorf("canary alerts: %w", err)
		}
		var out []outbox.AlertCondition
		for _, r := range results {
			key := r.Form + "/" + r.Route
			if r.Passed || !watched[key] {
				continue
			}
			// The summary names the form, the route and the channel, never the
			// provider's error text: that stays in the store, the inbox and status.
			out = append(out, outbox.AlertCondition{Kind: outbox.AlertCanaryFailed, Key: key, Form: r.Form,
				Channel: string(r.Channel), Since: r.FailingSince,
				Summary: fmt.Sprintf("the canary of form %s did not arrive through route %s (%s); its error is in status and the inbox", r.Form, r.Route, r.Channel)})
		}
		return out, nil
	}}
}
