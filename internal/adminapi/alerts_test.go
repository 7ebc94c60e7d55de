package adminapi

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// GET alerts lists the open alerts, and the resolved ones only when asked.
func TestAlertsRouteListsOpenThenResolved(t *testing.T) {
	st := openStore(t)
	s := NewServer(func() Backend { return &testBackend{store: st} })
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	open := outbox.Alert{ID: uuid.Must(uuid.NewV7()), Kind: outbox.AlertDeliveryDead, Key: "contact/webhook",
		Form: "contact", Summary: "route webhook of form contact gave up on 1 submission", Affected: 1, OpenedAt: at}
	gone := outbox.Alert{ID: uuid.Must(uuid.NewV7()), Kind: outbox.AlertSpoolBacklog, Key: "host", Summary: "spool", OpenedAt: at}
	for _, n := range []outbox.AlertNotice{
		{Notice: outbox.AlertOpened, Alert: open, Now: at},
		{Notice: outbox.AlertOpened, Alert: gone, Now: at},
		{Notice: outbox.AlertResolved, Alert: gone, Now: at.Add(time.Hour)},
	} {
		if ok, err := st.RecordAlert(context.Background(), n); !ok || err != nil {
			t.Fatalf("record %s: %v %v", n.Notice, ok, err)
		}
	}
	for target, want := range map[string][2]int{"/form_outbox/alerts": {1, 0}, "/form_outbox/alerts?resolved=5": {1, 1}} {
		w, re := call(t, s, "GET", target, "")
		if re != nil || w.Code != 200 {
			t.Fatalf("GET %s = %d %+v", target, w.Code, re)
		}
		var l AlertList
		if err := json.Unmarshal(w.Body.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if len(l.Open) != want[0] || len(l.Resolved) != want[1] || l.Open[0].Key != "contact/webhook" || l.Open[0].Affected != 1 {
			t.Errorf("GET %s = %+v, want %d open (contact/webhook, 1 lead), %d resolved", target, l, want[0], want[1])
		}
	}
	if _, re := call(t, s, "GET", "/form_outbox/alerts?resolved=x", ""); re == nil || re.Status != 400 {
		t.Errorf("resolved=x answered %+v, want 400", re)
	}
}
