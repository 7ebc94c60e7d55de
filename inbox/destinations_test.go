package inbox

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TestParkAndUnparkFromTheDestinationsPage parks a webhook by its key from the page's
// form, shows it, and unparks it with its row's button; a post without the session's
// token changes nothing, and an inbox limited to some forms only shows the page.
func TestParkAndUnparkFromTheDestinationsPage(t *testing.T) {
	f := newFixture(t)
	key := outbox.DestinationOf(outbox.Delivery{Channel: outbox.ChannelWebhook, Recipient: "https://crm.example.com/hook"}, "").Key
	if page := f.do("GET", "/inbox/destinations", nil, nil).Body.String(); !strings.Contains(page, "No destination is parked") {
		t.Fatalf("empty page:\n%s", page)
	}
	w := f.do("POST", "/inbox/destinations/park", post("key", key), nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/inbox/destinations?done=parked" {
		t.Fatalf("park: %d %q %s", w.Code, w.Header().Get("Location"), w.Body)
	}
	page := f.do("GET", "/inbox/destinations?done=parked", nil, nil).Body.String()
	for _, want := range []string{`data-key="` + key + `"`, `<span class="badge parked">by hand</span>`, `action="/inbox/destinations/unpark"`, "The destination is parked"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	// Without the session's token: refused, still parked.
	bad := post("key", key)
	bad.Set(tokenField, "forged")
	if w := f.do("POST", "/inbox/destinations/unpark", bad, nil); w.Code != http.StatusForbidden {
		t.Errorf("forged unpark: %d, want 403", w.Code)
	}
	if list, _ := f.store.ListParkedDestinations(context.Background()); len(list) != 1 {
		t.Fatalf("after a forged unpark: %+v", list)
	}
	w = f.do("POST", "/inbox/destinations/unpark", post("key", key), nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/inbox/destinations?done=unparked" || f.woken != 1 {
		t.Fatalf("unpark: %d %q (woken %d)", w.Code, w.Header().Get("Location"), f.woken)
	}
	if list, _ := f.store.ListParkedDestinations(context.Background()); len(list) != 0 {
		t.Errorf("still parked: %+v", list)
	}
	// Both actions are recorded with the operator's name.
	for _, kind := range []string{outbox.EventDestinationParked, outbox.EventDestinationUnparked} {
		evs, err := f.store.ListEvents(context.Background(), kind, 0)
		if err != nil || len(evs) != 1 || !strings.Contains(string(evs[0].Data), `"by":"ops"`) {
			t.Errorf("%s events: %+v, %v; want one by ops", kind, evs, err)
		}
	}
	if w := f.do("POST", "/inbox/destinations/unpark", post("key", key), nil); w.Code != http.StatusConflict {
		t.Errorf("unpark twice: %d, want 409", w.Code)
	}
	if w := f.do("POST", "/inbox/destinations/park", post("key", "webhook:nothex"), nil); w.Code != http.StatusBadRequest {
		t.Errorf("park a bad key: %d, want 400", w.Code)
	}

	limited := newFixture(t, "contact")
	if page := limited.do("GET", "/inbox/destinations", nil, nil).Body.String(); strings.Contains(page, "Park a destination") {
		t.Errorf("a limited inbox offers to park:\n%s", page)
	}
	if w := limited.do("POST", "/inbox/destinations/park", post("key", key), nil); w.Code != http.StatusForbidden {
		t.Errorf("park from a limited inbox: %d, want 403", w.Code)
	}
}
