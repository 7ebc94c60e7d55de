package backup_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/backup"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

func conditions(t *testing.T, m *backup.Monitor, now time.Time) map[string]outbox.AlertCondition {
	t.Helper()
	cs, err := m.Conditions(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]outbox.AlertCondition{}
	for _, c := range cs {
		if c.Kind != outbox.AlertBackupLag {
			t.Fatalf("condition kind %q", c.Kind)
		}
		out[c.Key] = c
	}
	return out
}

// Records not in the bucket past LagAlert raise backup_lag; shipping them resolves it.
func TestMonitorReportsLagUntilShipped(t *testing.T) {
	r := newRig(t, storetest.OpenSQLite(t))
	m := &backup.Monitor{Shipper: r.shipper, LagAlert: time.Minute}
	r.srv.Down()
	r.post(t, "contact")
	r.post(t, "quote")
	_ = r.shipper.ShipNow(context.Background())
	if got := conditions(t, m, time.Now()); len(got) != 0 {
		t.Fatalf("conditions within LagAlert: %v", got)
	}
	c, ok := conditions(t, m, time.Now().Add(2*time.Minute))["lag/web-1"]
	if !ok || c.Affected != 2 {
		t.Fatalf("conditions past LagAlert: %+v; want lag/web-1 with 2 affected", c)
	}
	r.srv.Up(t)
	if err := r.shipper.ShipNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := conditions(t, m, time.Now().Add(2*time.Minute)); len(got) != 0 {
		t.Fatalf("conditions after shipping: %v", got)
	}
}

// Journal released at max_local is reported for an hour.
func TestMonitorReportsDroppedRecords(t *testing.T) {
	r := newRig(t, storetest.OpenSQLite(t))
	r.shipper.MaxLocal = 1
	m := &backup.Monitor{Shipper: r.shipper, LagAlert: time.Hour}
	r.srv.Down()
	r.post(t, "contact")
	r.replay(t)
	_ = r.shipper.ShipNow(context.Background())
	now := time.Now()
	if c, ok := conditions(t, m, now)["dropped/web-1"]; !ok || c.Affected != 1 {
		t.Fatalf("conditions: %+v; want dropped/web-1 with 1", c)
	}
	if got := conditions(t, m, now.Add(2*time.Hour)); len(got) != 0 {
		t.Fatalf("conditions two hours later: %v", got)
	}
}

// A submission stored while the journal refused it is never backed up: reported per form.
func TestMonitorReportsStoredButNotJournaled(t *testing.T) {
	r := newRig(t, storetest.OpenSQLite(t))
	m := &backup.Monitor{Shipper: r.shipper}
	r.accept.SetSpool(refusingSpool{})
	r.accept.OnNotJournaled = func(s *outbox.Submission) { m.NotJournaled(s.Form, s.CreatedAt) }
	r.post(t, "contact")
	r.post(t, "contact")
	c, ok := conditions(t, m, time.Now())["unjournaled/contact"]
	if !ok || c.Affected != 2 || c.Form != "contact" {
		t.Fatalf("conditions: %+v; want unjournaled/contact with 2", c)
	}
}

// refusingSpool is a journal whose disk refuses every append.
type refusingSpool struct{}

func (refusingSpool) Append(*outbox.Submission, []outbox.Delivery) (outbox.AcceptResult, error) {
	return outbox.AcceptResult{}, errors.New("no space left on device")
}
func (refusingSpool) Holds(*outbox.Submission) bool { return false }
func (refusingSpool) Waiting() int                  { return 0 }
func (refusingSpool) Wake()                         {}
