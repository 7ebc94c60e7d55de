package formoutbox

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyevents"
)

// eventRecorder is an events handler module for tests: it keeps what it receives, the way
// an `events { on ... exec ... }` handler would be called.
type eventRecorder struct{}

var (
	recordedMu sync.Mutex
	recorded   []caddy.Event
)

func (eventRecorder) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "events.handlers.form_outbox_test_recorder",
		New: func() caddy.Module { return new(eventRecorder) },
	}
}

func (eventRecorder) Handle(_ context.Context, e caddy.Event) error {
	recordedMu.Lock()
	defer recordedMu.Unlock()
	recorded = append(recorded, e)
	return nil
}

func init() { caddy.RegisterModule(eventRecorder{}) }

var _ caddyevents.Handler = eventRecorder{}

// TestInProcessEventsCarryIdsAndNoVisitorData subscribes a handler to both events, posts
// a form whose webhook answers 410 (dead at once) and checks what the handler heard.
func TestInProcessEventsCarryIdsAndNoVisitorData(t *testing.T) {
	// 400 refuses this message (dead at once); a 410 would park the webhook instead.
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer hook.Close()
	recordedMu.Lock()
	recorded = nil
	recordedMu.Unlock()

	addr := freeAddr(t)
	handler := contactHandler()
	handler["notify"] = []any{map[string]any{"channel": "webhook", "url": hook.URL, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}
	runCaddy(t, map[string]any{
		"http": httpApp(addr, handler),
		"events": map[string]any{"subscriptions": []any{map[string]any{
			"events":   []string{EventNameSubmissionReceived, EventNameDeliveryDead},
			"handlers": []any{map[string]any{"handler": "form_outbox_test_recorder"}},
		}}},
	})
	if resp := postContact(t, addr); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("post = %d, want 303", resp.StatusCode)
	}
	sub := onlySubmission(t, runningApp(t).store)
	byName := func() map[string]caddy.Event {
		recordedMu.Lock()
		defer recordedMu.Unlock()
		out := map[string]caddy.Event{}
		for _, e := range recorded {
			out[e.Name()] = e
		}
		return out
	}
	waitFor(t, "both events", func() bool { return len(byName()) == 2 })
	evs := byName()

	rec := evs[EventNameSubmissionReceived]
	if rec.Data["submission_id"] != sub.ID.String() || rec.Data["form"] != "contact" || rec.Data["status"] != "accepted" {
		t.Errorf("submission_received data = %v, want the id, form and status of %s", rec.Data, sub.ID)
	}
	dead := evs[EventNameDeliveryDead]
	ds, err := runningApp(t).store.ListDeliveries(context.Background(), sub.ID)
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries: %v %v", ds, err)
	}
	if dead.Data["delivery_id"] != ds[0].ID.String() || dead.Data["submission_id"] != sub.ID.String() || dead.Data["channel"] != "webhook" {
		t.Errorf("delivery_dead data = %v, want ids of delivery %s", dead.Data, ds[0].ID)
	}
	for name, e := range evs {
		raw, _ := json.Marshal(e.Data)
		for _, secret := range []string{"Ada", "ada@example.com", "Hello", hook.URL} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("event %s carries visitor or target data %q: %s", name, secret, raw)
			}
		}
	}
}
