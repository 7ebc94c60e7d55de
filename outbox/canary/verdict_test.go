package canary

import (
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TestParkedRouteFailsAtOnce: a delivery held because its destination is parked fails
// its route before the deadline, with its last error; a pending one waits for it.
func TestParkedRouteFailsAtOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)
	run := outbox.CanaryRun{Form: "contact", PeriodStart: now.Add(-5 * time.Second)}
	ds := []outbox.Delivery{
		{Route: "crm", Channel: outbox.ChannelWebhook, Status: outbox.DeliveryParked, LastError: "permanent gone (HTTP 410)"},
		{Route: "sales", Channel: outbox.ChannelEmail, Status: outbox.DeliveryPending},
	}
	decided, open := verdicts(run, ds, now, now.Add(time.Minute), "within 1m0s")
	if open != 1 || len(decided) != 1 || decided[0].Route != "crm" || decided[0].Passed ||
		decided[0].Error != "parked: permanent gone (HTTP 410)" {
		t.Errorf("verdicts = %+v, %d open; want crm failed as parked, sales open", decided, open)
	}
}
