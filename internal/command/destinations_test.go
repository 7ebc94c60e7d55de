package command

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
)

// The destination verbs: the list as a table, park and unpark with the key in the query,
// an unpark of what is not parked failing with the API's error.
func TestDestinationVerbs(t *testing.T) {
	admin := newFakeAdmin(t, map[string]answer{
		"GET /form_outbox/destinations": {200, `{"destinations":[{"key":"webhook:0123456789abcdef","channel":"webhook",` +
			`"label":"webhook crm.example.com #012345","reason":"permanent gone (HTTP 410)","manual":false,` +
			`"parked_at":"2026-12-01T10:00:00Z","next_probe_at":"2026-12-01T10:01:00Z","held":21,"leads":20}]}`},
		"POST /form_outbox/destinations/park":   {200, `{"key":"telegram:-1001","result":"parked"}`},
		"POST /form_outbox/destinations/unpark": {404, `{"error":"outbox: destination is not parked"}`},
	})
	out, err := form(t, admin.addr(), "destinations")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KEY", "webhook:0123456789abcdef", "webhook crm.example.com #012345", "permanent gone (HTTP 410)", "21", "20"} {
		if !strings.Contains(out, want) {
			t.Errorf("destinations lacks %q:\n%s", want, out)
		}
	}
	if out, err := form(t, admin.addr(), "park", "telegram:-1001"); err != nil || strings.TrimSpace(out) != "telegram:-1001 parked" {
		t.Errorf("park: %q, %v", out, err)
	}
	_, err = form(t, admin.addr(), "unpark", "webhook:0123456789abcdef")
	var ae *adminapi.Error
	if !errors.As(err, &ae) || ae.Status != 404 {
		t.Errorf("unpark of what is not parked: %v, want the API's 404", err)
	}
	if _, err := form(t, admin.addr(), "park"); err == nil {
		t.Error("park without a key succeeded")
	}
	want := []string{"GET /form_outbox/destinations", "POST /form_outbox/destinations/park?key=telegram%3A-1001",
		"POST /form_outbox/destinations/unpark?key=webhook%3A0123456789abcdef"}
	if got := admin.requests(); !slices.Equal(got, want) {
		t.Errorf("sent %v, want %v", got, want)
	}
}
