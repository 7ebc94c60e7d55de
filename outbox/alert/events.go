package alert

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// DefaultEventAlertWindow is how long an event-like alert (a submission unrouted, a
// template that printed a missing field) stays open after its last event: long enough
// for a site owner who reads alerts once a day to see it, short enough that fixing the
// config resolves it by the next day.
const DefaultEventAlertWindow = 24 * time.Hour

// eventAlertScan bounds the events one poll reads per kind, newest first, on the
// events (kind, id) index: a poll costs one short indexed read however old the table.
// Past it the counts are "at least" counts, which an alert needs no more precisely.
const eventAlertScan = 1000

// EventLister is the read the event alert sources make (outbox.Store.ListEvents: newest
// first, at most limit).
type EventLister interface {
	ListEvents(ctx context.Context, kind string, limit int) ([]outbox.Event, error)
}

// Unrouted is the unrouted source: it reports, per form, the submissions stored with no route in the last
// window (submission.unrouted events, written with the reason no_route_matched by
// intake/plan.go): a post every route's guards missed, with no fallback, notified no
// one. window <= 0 is DefaultEventAlertWindow.
func Unrouted(events EventLister, window time.Duration) outbox.AlertSource {
	return eventAlerts{name: outbox.AlertUnrouted, kind: outbox.AlertUnrouted, event: outbox.EventUnrouted, events: events, window: window,
		summary: func(form string, n int, _ []string, window string) string {
			return fmt.Sprintf("%d submission(s) to form %s matched no route in the last %s and notified no one; add a fallback route or fix the guards",
				n, form, window)
		}}
}

// TemplateEmpty is the template_empty source: it reports, per form, the submissions whose notification printed a
// field the post did not carry in the last window (template.empty events,
// intake/templateempty.go), naming the routes, options and fields (configuration,
// never values). window <= 0 is DefaultEventAlertWindow.
func TemplateEmpty(events EventLister, window time.Duration) outbox.AlertSource {
	return eventAlerts{name: outbox.AlertTemplateEmpty, kind: outbox.AlertTemplateEmpty, event: outbox.EventTemplateEmpty, events: events, window: window,
		summary: func(form string, n int, where []string, window string) string {
			return fmt.Sprintf("%d submission(s) to form %s were notified with an empty field in the last %s (%s)",
				n, form, window, strings.Join(where, "; "))
		}}
}

// eventAlerts is an outbox.AlertSource over one event kind, keyed per form.
type eventAlerts struct {
	name, kind, event string
	events            EventLister
	window            time.Duration
	summary           func(form string, affected int, where []string, window string) string // window as 24h
}

// Name implements outbox.AlertSource.
func (a eventAlerts) Name() string { return a.name }

// eventForm is what the event data of both kinds say about where it happened.
type eventForm struct {
	Form   string `json:"form"`
	Route  string `json:"route"`
	Option string `json:"option"`
	Field  string `json:"field"`
}

// Conditions implements outbox.AlertSource: one condition per form with events of the kind
// at or after now - window.
func (a eventAlerts) Conditions(ctx context.Context, now time.Time) ([]outbox.AlertCondition, error) {
	window := a.window
	if window <= 0 {
		window = DefaultEventAlertWindow
	}
	evs, err := a.events.ListEvents(ctx, a.event, eventAlertScan)
	if err != nil {
		return nil, fmt.Errorf("%s alerts: %w", a.name, err)
	}
	type agg struct {
		subs  map[uuid.UUID]bool
		where []string
		since time.Time
	}
	byForm := map[string]*agg{}
	since := now.Add(-window)
	for _, ev := range evs {
		if ev.At.Before(since) {
			continue // not break: ids and times rise together, but not strictly across instances
		}
		var d eventForm
		if err := json.Unmarshal(ev.Data, &d); err != nil || d.Form == "" {
			continue // not written by this version; nothing to key it on
		}
		g := byForm[d.Form]
		if g == nil {
			g = &agg{subs: map[uuid.UUID]bool{}}
			byForm[d.Form] = g
		}
		g.subs[ev.SubmissionID] = true
		if g.since.IsZero() || ev.At.Before(g.since) {
			g.since = ev.At
		}
		if d.Field != "" {
			w := fmt.Sprintf("route %s %s: %s", d.Route, d.Option, d.Field)
			if !slices.Contains(g.where, w) {
				g.where = append(g.where, w)
			}
		}
	}
	out := make([]outbox.AlertCondition, 0, len(byForm))
	for form, g := range byForm {
		sort.Strings(g.where)
		out = append(out, outbox.AlertCondition{Kind: a.kind, Key: form, Form: form, Affected: len(g.subs), Since: g.since,
			Summary: a.summary(form, len(g.subs), g.where, strings.TrimSuffix(strings.TrimSuffix(window.String(), "0s"), "0m"))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
