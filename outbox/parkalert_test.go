package outbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TestParkedAlertsHoldWhileParked: the source reports a parked webhook with its key,
// channel and held leads, never its URL, and reports nothing once it is unparked.
func TestParkedAlertsHoldWhileParked(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		clock := newClock()
		p := newSwitchable(errGone)
		w := startWorker(t, outbox.WorkerConfig{Store: s, Sender: router(p.Provider), PollInterval: time.Hour,
			Now: clock.Now, After: clock.After, ProcessClock: true})
		src := outbox.ParkedAlerts(s)
		if cs, err := src.Conditions(ctxFor(t), clock.Now()); err != nil || len(cs) != 0 {
			t.Fatalf("before any park: %+v, %v", cs, err)
		}
		d := acceptHook(t, s)
		w.Wake()
		waitFor(t, 10*time.Second, "the lead held", statusIs(t, s, d.ID, outbox.DeliveryParked, 0))
		cs, err := src.Conditions(ctxFor(t), clock.Now())
		key := outbox.DestinationOf(d, "").Key
		if err != nil || len(cs) != 1 {
			t.Fatalf("while parked: %+v, %v", cs, err)
		}
		c := cs[0]
		if c.Kind != outbox.AlertDestinationParked || c.Key != key || c.Destination != key || c.Channel != "webhook" || c.Affected != 1 {
			t.Errorf("condition %+v", c)
		}
		if strings.Contains(c.Summary, "secret-token") || !strings.Contains(c.Summary, "hooks.example.com") {
			t.Errorf("summary %q: want the host, never the URL's token", c.Summary)
		}
		if _, err := w.UnparkDestination(ctxFor(t), key, "ops"); err != nil {
			t.Fatal(err)
		}
		if cs, err := src.Conditions(ctxFor(t), clock.Now()); err != nil || len(cs) != 0 {
			t.Errorf("after unpark: %+v, %v", cs, err)
		}
	})
}
