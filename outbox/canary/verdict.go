package canary

import (
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// verdicts judges a run's deliveries, grouped by route: a route passed when every one
// of its deliveries was sent; it failed when one went dead or is parked (its destination
// is known to fail: waiting for the deadline would only delay the news), or when due has
// come with one not yet sent (still pending, retrying or leased). A route with neither
// is still open and gets no verdict yet. The routes come back in the order their first
// delivery was planned.
func verdicts(run outbox.CanaryRun, deliveries []outbox.Delivery, now, due time.Time, deadline string) (decided []outbox.CanaryResult, open int) {
	var order []string
	byRoute := map[string][]outbox.Delivery{}
	for _, d := range deliveries {
		if _, ok := byRoute[d.Route]; !ok {
			order = append(order, d.Route)
		}
		byRoute[d.Route] = append(byRoute[d.Route], d)
	}
	for _, route := range order {
		ds := byRoute[route]
		r := outbox.CanaryResult{Form: run.Form, Route: route, Channel: ds[0].Channel, PeriodStart: run.PeriodStart,
			SubmissionID: run.SubmissionID, At: now}
		var dead, unsent *outbox.Delivery
		for i := range ds {
			switch ds[i].Status {
			case outbox.DeliverySent:
			case outbox.DeliveryDead, outbox.DeliveryParked:
				if dead == nil {
					dead = &ds[i]
				}
			default:
				if unsent == nil {
					unsent = &ds[i]
				}
			}
		}
		switch {
		case dead != nil:
			r.Error = bounded(string(dead.Status) + lastError(dead))
		case unsent == nil:
			r.Passed = true
		case !now.Before(due):
			r.Error = bounded(fmt.Sprintf("not sent %s (%s%s)", deadline, unsent.Status, lastError(unsent)))
		default:
			open++
			continue
		}
		decided = append(decided, r)
	}
	return decided, open
}

func lastError(d *outbox.Delivery) string {
	if d.LastError == "" {
		return ""
	}
	return ": " + d.LastError
}

// bounded cuts s to outbox.MaxCanaryError bytes, at a rune boundary.
func bounded(s string) string {
	if len(s) <= outbox.MaxCanaryError {
		return s
	}
	cut := outbox.MaxCanaryError
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut]
}
