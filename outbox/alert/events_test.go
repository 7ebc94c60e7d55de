package alert_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/alert"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// acceptWithEvent stores a submission of form with one extra event of kind at at.
func acceptWithEvent(t *testing.T, store outbox.Store, form, kind string, data map[string]string, at time.Time) {
	t.Helper()
	raw, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	sub := storetest.NewSubmission(form, storetest.WithCreatedAt(at))
	sub.Events = append(sub.Events, outbox.Event{Kind: kind, Data: raw, At: at})
	if _, err := outbox.Accept(context.Background(), store, sub, nil); err != nil {
		t.Fatal(err)
	}
}

// TestEventAlertSources: the unrouted and template_empty sources report one condition
// per form with events in the window, counting submissions, from the oldest event in
// it, and nothing for a form whose events are older; on both stores.
func TestEventAlertSources(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			unrouted := map[string]string{"form": "contact", "reason": "no route matched"}
			acceptWithEvent(t, store, "contact", outbox.EventUnrouted, unrouted, now.Add(-2*time.Hour))
			acceptWithEvent(t, store, "contact", outbox.EventUnrouted, unrouted, now.Add(-time.Hour))
			acceptWithEvent(t, store, "old", outbox.EventUnrouted, map[string]string{"form": "old"}, now.Add(-25*time.Hour))
			empty := map[string]string{"form": "quote", "route": "email", "option": "subject", "field": "nmae"}
			acceptWithEvent(t, store, "quote", outbox.EventTemplateEmpty, empty, now.Add(-time.Minute))

			got, err := alert.Unrouted(store, 0).Conditions(context.Background(), now)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Kind != outbox.AlertUnrouted || got[0].Key != "contact" || got[0].Form != "contact" ||
				got[0].Affected != 2 || !got[0].Since.Equal(now.Add(-2*time.Hour)) ||
				!strings.HasPrefix(got[0].Summary, "2 submission(s) to form contact matched no route in the last 24h and") {
				t.Fatalf("unrouted conditions %+v", got)
			}
			got, err = alert.TemplateEmpty(store, time.Hour).Conditions(context.Background(), now)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Kind != outbox.AlertTemplateEmpty || got[0].Key != "quote" || got[0].Affected != 1 ||
				!strings.Contains(got[0].Summary, "(route email subject: nmae)") {
				t.Fatalf("template_empty conditions %+v", got)
			}
			// Quiet for a window: resolved.
			if got, err := alert.Unrouted(store, 0).Conditions(context.Background(), now.Add(25*time.Hour)); err != nil || len(got) != 0 {
				t.Fatalf("after the window: %+v, %v", got, err)
			}
		})
	}
}
