package command

import (
	"slices"
	"strings"
	"testing"
)

// `alerts` prints the open alerts as a table and asks for resolved ones only when told.
func TestAlertsListsOpenAndResolved(t *testing.T) {
	admin := newFakeAdmin(t, map[string]answer{
		"GET /form_outbox/alerts": {200, `{"open":[{"id":"a1","kind":"delivery_dead","key":"contact/webhook","form":"contact",` +
			`"summary":"route webhook of form contact gave up on 2 submissions","affected":2,"notices":1,` +
			`"opened_at":"2030-01-02T03:04:05Z","notified_at":"2030-01-02T03:04:05Z"}],` +
			`"resolved":[{"id":"a0","kind":"spool_backlog","key":"host","summary":"3 posts wait","affected":3,"notices":2,` +
			`"opened_at":"2030-01-01T03:04:05Z","notified_at":"2030-01-01T03:04:05Z","resolved_at":"2030-01-01T05:04:05Z"}]}`},
	})
	out, err := form(t, admin.addr(), "alerts")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KIND", "delivery_dead", "contact/webhook", "gave up on 2 submissions", "RESOLVED", "spool_backlog"} {
		if !strings.Contains(out, want) {
			t.Errorf("alerts printed no %q:\n%s", want, out)
		}
	}
	if _, err := form(t, admin.addr(), "alerts", "--resolved", "5"); err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /form_outbox/alerts", "GET /form_outbox/alerts?resolved=5"}
	if got := admin.requests(); !slices.Equal(got, want) {
		t.Errorf("sent %v, want %v", got, want)
	}
}
