package intake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// A flood of distinct clients is remembered up to max_clients and no further.
func TestRateLimiterMemoryIsBounded(t *testing.T) {
	l := newLimiter(RateLimit{Requests: 2, Window: Duration(time.Minute), MaxClients: 100, MaxStored: 1})
	for i := range 5000 {
		if ok, _ := l.allow(fmt.Sprintf("10.0.%d.%d", i/256, i%256), testNow); !ok {
			t.Fatalf("client %d limited on its first post", i)
		}
	}
	if n := l.clients(); n != 100 {
		t.Errorf("remembers %d clients, want 100", n)
	}
}

func TestRateLimiterRefillsAndKeysIPv6By64(t *testing.T) {
	l := newLimiter(RateLimit{Requests: 2, Window: Duration(time.Minute), MaxClients: 10, MaxStored: 1})
	a, b := clientKey("2001:db8:1:2::1"), clientKey("2001:db8:1:2:ffff::9")
	if a != b || clientKey("192.0.2.1") != "192.0.2.1" {
		t.Fatalf("keys %q %q", a, b)
	}
	l.allow(a, testNow)
	l.allow(b, testNow)
	ok, wait := l.allow(a, testNow)
	if ok || wait != 30*time.Second {
		t.Fatalf("third post: ok=%v wait=%s, want limited for 30s", ok, wait)
	}
	if ok, _ := l.allow(a, testNow.Add(30*time.Second)); !ok {
		t.Errorf("not refilled after 30s")
	}
	if !l.storeQuota(testNow) || l.storeQuota(testNow) || !l.storeQuota(testNow.Add(time.Minute)) {
		t.Errorf("store quota is not one row per window")
	}
}

func TestDedupeWindowExpires(t *testing.T) {
	c := contactConfig(t)
	res := mustParse(t, c, postForm(form(validContact...)))
	c.remember(res, stored(res))
	if again, _ := c.Parse(postForm(form(validContact...)), testNow.Add(9*time.Second)); again.Stored == nil || again.Stored.ID != res.Submission.ID {
		t.Errorf("identical post after 9s not answered with the first id")
	}
	if later, _ := c.Parse(postForm(form(validContact...)), testNow.Add(11*time.Second)); later.Stored != nil {
		t.Errorf("identical post after 11s deduplicated")
	}
	c2 := contactConfig(t)
	c2.DedupeOff = true
	if err := c2.Provision(); err != nil {
		t.Fatal(err)
	}
	r1 := mustParse(t, c2, postForm(form(validContact...)))
	c2.remember(r1, stored(r1))
	if r2 := mustParse(t, c2, postForm(form(validContact...))); r2.Stored != nil {
		t.Errorf("dedupe off still deduplicates")
	}
}

// Monitor mode accepts a post that breaks the spec or adds fields, and the store writes
// its schema.drift event in the same transaction.
func TestMonitorModeRecordsDrift(t *testing.T) {
	s := openRealStore(t)
	c := contactConfig(t)
	c.Mode = ModeMonitor
	w := s.serve(t, c, postForm(form("name", "Ada", "email", "not-an-address", "message", "Hi", "phone", "123")))
	if w.Code != http.StatusSeeOther {
		t.Fatalf("status %d", w.Code)
	}
	var sub row
	for _, r := range s.rows(t) {
		sub = r
	}
	if sub.Status != "accepted" || fmt.Sprint(sub.Events) != "[submission.received schema.drift]" {
		t.Fatalf("stored %s with events %v", sub.Status, sub.Events)
	}
	events, err := s.ListEvents(t.Context(), outbox.EventSchemaDrift, 5)
	if err != nil || len(events) != 1 {
		t.Fatalf("events %v %v", events, err)
	}
	var data struct {
		Form            string
		Fields, Unknown []string
	}
	_ = json.Unmarshal(events[0].Data, &data)
	if data.Form != "contact" || fmt.Sprint(data.Fields) != "[email]" || fmt.Sprint(data.Unknown) != "[phone]" {
		t.Errorf("drift data %s", events[0].Data)
	}
}

// Enforce mode quarantines a post that breaks the spec, and the store writes which fields
// failed (the 422's messages, never the values) in the same transaction, for the inbox.
func TestEnforceModeRecordsViolations(t *testing.T) {
	s := openRealStore(t)
	c := contactConfig(t)
	w := s.serve(t, c, postForm(form("email", "not-an-address", "message", "secret value")))
	if w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("status %d", w.Code)
	}
	var sub row
	for _, r := range s.rows(t) {
		sub = r
	}
	if sub.Status+"/"+sub.Reason != "quarantined/schema_violation" ||
		fmt.Sprint(sub.Events) != "[submission.received schema.violation]" {
		t.Fatalf("stored %s/%s with events %v", sub.Status, sub.Reason, sub.Events)
	}
	events, err := s.ListEvents(t.Context(), outbox.EventSchemaViolation, 5)
	if err != nil || len(events) != 1 {
		t.Fatalf("events %v %v", events, err)
	}
	var data outbox.SchemaViolationData
	if err := json.Unmarshal(events[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	want := "contact [{name name is required} {email email must be a valid email address}]"
	if got := fmt.Sprint(data.Form, " ", data.Errors); got != want {
		t.Errorf("violation data %s, want %s", got, want)
	}
	if strings.Contains(string(events[0].Data), "not-an-address") {
		t.Errorf("the event holds a visitor value: %s", events[0].Data)
	}
}

func TestClientIPModes(t *testing.T) {
	for mode, want := range map[string]string{"": "hash", ClientIPHash: "hash", ClientIPFull: "192.0.2.1", ClientIPOff: ""} {
		c := contactConfig(t)
		c.ClientIPMode = mode
		if err := c.Provision(); err != nil {
			t.Fatal(err)
		}
		res := mustParse(t, c, postForm(form(validContact...)))
		got := res.Submission.Meta.ClientIP
		if want == "hash" {
			want = c.hashIP("192.0.2.1")
			if len(want) != clientIPHashHex || strings.Contains(want, "192.0.2.1") {
				t.Errorf("client_ip %q: hash %q is not %d hex characters of a keyed hash", mode, want, clientIPHashHex)
			}
		}
		if got != want {
			t.Errorf("client_ip %q: stored %q, want %q", mode, got, want)
		}
		// Dedupe keys on the hashed address whatever is stored, so it works in every mode.
		c.remember(res, stored(res))
		if again := mustParse(t, c, postForm(form(validContact...))); again.Stored == nil || again.Stored.ID != res.Submission.ID {
			t.Errorf("client_ip %q: an identical post from the same client was not deduplicated", mode)
		}
	}
}

func TestPreflight(t *testing.T) {
	c := contactConfig(t)
	c.AllowedOrigins = []string{"https://Example.com/"}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		origin, method string
		code           int
		grant          string
	}{
		{"https://example.com", "POST", 204, "https://example.com"},
		{"https://EXAMPLE.com:443", "POST", 204, "https://EXAMPLE.com:443"}, // not in normal form: parsed
		{"https://example.com:8443", "POST", 403, ""},
		{"https://evil.example", "POST", 403, ""},
		{"null", "POST", 403, ""},
		{"https://example.com", "DELETE", 403, ""},
	} {
		r := httptest.NewRequest(http.MethodOptions, "/contact", nil)
		r.Header.Set("Origin", tt.origin)
		r.Header.Set("Access-Control-Request-Method", tt.method)
		w := httptest.NewRecorder()
		c.preflight(w, r)
		if w.Code != tt.code || w.Header().Get("Access-Control-Allow-Origin") != tt.grant {
			t.Errorf("%s %s: %d grant %q, want %d %q", tt.origin, tt.method, w.Code,
				w.Header().Get("Access-Control-Allow-Origin"), tt.code, tt.grant)
		}
		if tt.grant != "" {
			h := w.Header()
			if h.Get("Access-Control-Allow-Methods") != "POST" || h.Get("Access-Control-Allow-Headers") != "Content-Type, Accept, Idempotency-Key" ||
				h.Get("Access-Control-Max-Age") != "600" {
				t.Errorf("%s: grant headers %v", tt.origin, h)
			}
		}
	}
}
