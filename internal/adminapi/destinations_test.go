package adminapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TestDestinationRoutes parks a webhook by key, lists it, unparks it, and refuses a key
// that names nothing.
func TestDestinationRoutes(t *testing.T) {
	b := &testBackend{store: openStore(t)}
	s := NewServer(func() Backend { return b })
	key := outbox.DestinationOf(outbox.Delivery{Channel: outbox.ChannelWebhook, Recipient: "https://crm.example.com/hook"}, "").Key

	if _, re := call(t, s, "POST", "/form_outbox/destinations/park?key="+key, ""); re != nil {
		t.Fatalf("park: %v", re)
	}
	w, re := call(t, s, "GET", "/form_outbox/destinations", "")
	if re != nil {
		t.Fatalf("list: %v", re)
	}
	var got Destinations
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Destinations) != 1 || got.Destinations[0].Key != key || !got.Destinations[0].Manual || got.Destinations[0].NextProbe != nil {
		t.Fatalf("list: %s", w.Body.String())
	}
	w, re = call(t, s, "POST", "/form_outbox/destinations/unpark?key="+key, "")
	if re != nil || w.Code != http.StatusOK {
		t.Fatalf("unpark: %v %d", re, w.Code)
	}
	if _, re := call(t, s, "POST", "/form_outbox/destinations/unpark?key="+key, ""); re == nil || re.Status != http.StatusNotFound {
		t.Errorf("unpark again: %+v, want 404", re)
	}
	if _, re := call(t, s, "POST", "/form_outbox/destinations/park?key=fax:1", ""); re == nil || re.Status != http.StatusBadRequest {
		t.Errorf("park a bad key: %+v, want 400", re)
	}
}
