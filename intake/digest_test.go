package intake

import (
	"slices"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TestDigestRoutePlansNothing: a digest route gets no delivery per submission, the
// submission is not unrouted (the digest will list it), and the other routes, fallback
// included, route as if the digest route were not there.
func TestDigestRoutePlansNothing(t *testing.T) {
	s := openRealStore(t)
	c := routedConfig(t, true)
	c.Routes = append(c.Routes, Route{Name: "daily", Channel: outbox.ChannelEmail, To: []string{"owner@example.com"}, Digest: "daily at 08:00 Europe/Berlin"})
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, c, postForm(form("topic", "other", "message", "hi")))
	if got := routesOf(res.Deliveries); !slices.Equal(got, []string{"rest " + slackURL}) {
		t.Fatalf("routes %v, want the fallback only", got)
	}

	only := &Config{Form: "contact", IPHashKey: []byte("k"),
		Routes: []Route{{Channel: outbox.ChannelEmail, To: []string{"owner@example.com"}, Digest: "hourly"}}}
	if err := only.Provision(); err != nil {
		t.Fatal(err)
	}
	w := s.serve(t, only, postForm(form("message", "hello")))
	if w.Code != 200 {
		t.Fatalf("answer %d %s", w.Code, w.Body)
	}
	rows := s.rows(t)
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	for _, r := range rows {
		if r.Status != "accepted" || r.Reason != "" || len(r.Deliveries) != 0 || !slices.Equal(r.Events, []string{outbox.EventSubmissionReceived}) {
			t.Fatalf("row %+v, want accepted, no reason, no delivery, only submission.received", r)
		}
	}
	drs := only.DigestRoutes()
	if len(drs) != 1 || drs[0].Form != "contact" || drs[0].Name != "email" || drs[0].Schedule.String() != "hourly" ||
		!slices.Equal(drs[0].To, []string{"owner@example.com"}) || drs[0].MaxAttempts != outbox.DefaultEmailAttempts {
		t.Errorf("DigestRoutes = %+v", drs)
	}
}

func TestDigestProvisionErrors(t *testing.T) {
	to := []string{"owner@example.com"}
	for _, tc := range []struct {
		name  string
		route Route
		want  string
	}{
		{"bad schedule", Route{Channel: outbox.ChannelEmail, To: to, Digest: "daily at 25:00"}, `notify email: digest: time "25:00"`},
		{"webhook", Route{Channel: outbox.ChannelWebhook, URL: "https://example.com/h", Digest: "hourly"}, "digest is for email routes"},
		{"guard", Route{Channel: outbox.ChannelEmail, To: to, Digest: "hourly",
			When: []Guard{{Field: "m", Op: GuardIs, Values: []string{"x"}}}}, "takes no `when` guards"},
		{"fallback", Route{Channel: outbox.ChannelEmail, To: to, Digest: "hourly", Fallback: true}, "is no fallback"},
		{"subject", Route{Channel: outbox.ChannelEmail, To: to, Digest: "hourly", Subject: "x"}, "subject and body are built in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Form: "contact", Routes: []Route{tc.route}}
			if err := c.Provision(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("provision: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
