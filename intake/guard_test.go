package intake

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
	"github.com/formoutbox/caddy-form-outbox/providers/slack"
	"github.com/formoutbox/caddy-form-outbox/providers/telegram"
)

const slackURL = "https://hooks.slack.example/services/T0/B0/secretpart"

// routedConfig is a form whose routes depend on what was submitted: sales and support
// email by topic, Telegram for urgent messages, and a Slack fallback.
func routedConfig(t testing.TB, fallback bool) *Config {
	t.Helper()
	c := &Config{
		Form: "contact",
		Routes: []Route{
			{Name: "sales", Channel: outbox.ChannelEmail, To: []string{"sales@example.com"},
				When: []Guard{{Field: "topic", Op: GuardIs, Values: []string{"sales"}}}},
			{Name: "support", Channel: outbox.ChannelEmail, To: []string{"support@example.com"},
				When: []Guard{{Field: "topic", Op: GuardIn, Values: []string{"support", "billing"}}}},
			{Name: "urgent", Channel: outbox.ChannelTelegram, ChatID: "-100123", Token: "123:SECRET-TOKEN",
				When: []Guard{{Field: "message", Op: GuardMatches, Values: []string{"(?i)urgent"}}}},
		},
		IPHashKey: []byte("test-key"),
	}
	if fallback {
		c.Routes = append(c.Routes, Route{Name: "rest", Channel: outbox.ChannelSlack, URL: slackURL, Fallback: true})
	}
	if err := c.Provision(); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return c
}

func routesOf(ds []outbox.Delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Route+" "+d.Recipient)
	}
	slices.Sort(out)
	return out
}

func TestGuardsChooseRoutes(t *testing.T) {
	c := routedConfig(t, true)
	for _, tc := range []struct {
		name   string
		fields []string
		want   []string
	}{
		{"is", []string{"topic", "sales", "message", "hi"}, []string{"sales sales@example.com"}},
		{"in", []string{"topic", "billing", "message", "hi"}, []string{"support support@example.com"}},
		{"all guards of several routes", []string{"topic", "sales", "message", "URGENT please"},
			[]string{"sales sales@example.com", "urgent -100123"}},
		{"none: fallback", []string{"topic", "other", "message", "hi"}, []string{"rest " + slackURL}},
		{"missing field reads empty", []string{"message", "hi"}, []string{"rest " + slackURL}},
		{"is is exact", []string{"topic", "Sales", "message", "hi"}, []string{"rest " + slackURL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustParse(t, c, postForm(form(tc.fields...)))
			if got := routesOf(res.Deliveries); !slices.Equal(got, tc.want) {
				t.Fatalf("routes %v, want %v", got, tc.want)
			}
			if res.Submission.Reason != "" || len(res.Submission.Events) != 0 {
				t.Fatalf("a routed submission has reason %q, events %+v", res.Submission.Reason, res.Submission.Events)
			}
		})
	}
}

// TestNoRouteMatchedIsStoredAndShown: without a fallback, a submission no guard lets
// through is stored, with the reason no_route_matched and a submission.unrouted event,
// and no delivery.
func TestNoRouteMatchedIsStoredAndShown(t *testing.T) {
	s := openRealStore(t)
	c := routedConfig(t, false)
	w := s.serve(t, c, postForm(form("topic", "other", "message", "hello")))
	if w.Code != 200 || !strings.Contains(w.Body.String(), "Thank you") {
		t.Fatalf("answer %d %s, want the thank-you page", w.Code, w.Body)
	}
	rows := s.rows(t)
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	for _, r := range rows {
		if r.Status != "accepted" || r.Reason != outbox.ReasonNoRouteMatched || len(r.Deliveries) != 0 ||
			!slices.Equal(r.Events, []string{outbox.EventSubmissionReceived, outbox.EventUnrouted}) {
			t.Fatalf("row %+v", r)
		}
	}
	evs, err := s.ListEvents(context.Background(), outbox.EventUnrouted, 10)
	if err != nil || len(evs) != 1 || !strings.Contains(string(evs[0].Data), `"reason":"no route matched"`) {
		t.Fatalf("events %+v, %v", evs, err)
	}
}

func TestGuardProvisionErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		route Route
		want  string
	}{
		{"bad regexp", Route{Channel: outbox.ChannelEmail, To: []string{"a@example.com"},
			When: []Guard{{Field: "m", Op: GuardMatches, Values: []string{"(unclosed"}}}}, "when field m matches: error parsing regexp"},
		{"unknown op", Route{Channel: outbox.ChannelEmail, To: []string{"a@example.com"},
			When: []Guard{{Field: "m", Op: "contains", Values: []string{"x"}}}}, `unknown operator "contains"`},
		{"fallback with guard", Route{Channel: outbox.ChannelEmail, To: []string{"a@example.com"}, Fallback: true,
			When: []Guard{{Field: "m", Op: GuardIs, Values: []string{"x"}}}}, "a fallback route takes no guards"},
		{"telegram without token", Route{Channel: outbox.ChannelTelegram, ChatID: "-1"}, "telegram needs the bot's token"},
		{"telegram bad chat", Route{Channel: outbox.ChannelTelegram, ChatID: "me", Token: "t"}, `telegram chat id "me"`},
		{"slack URL not printed", Route{Channel: outbox.ChannelSlack, URL: "hooks.slack.com/services/SECRET"}, "the slack webhook URL must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Form: "contact", Routes: []Route{tc.route}}
			err := c.Provision()
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("provision: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestChatPayloadStoredOnEveryStore: the stored payload of a chat delivery is the exact
// request body (rendered at intake, with the inbox link) and never holds the bot token,
// on SQLite and PostgreSQL.
func TestChatPayloadStoredOnEveryStore(t *testing.T) {
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			c := routedConfig(t, true)
			c.InboxURL = "https://admin.example.com/inbox"
			res := mustParse(t, c, postForm(form("topic", "other", "message", "urgent: <!channel> & call me")))
			if _, err := outbox.Accept(context.Background(), store, res.Submission, res.Deliveries); err != nil {
				t.Fatal(err)
			}
			ds, err := store.ListDeliveries(context.Background(), res.Submission.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := routesOf(ds); !slices.Equal(got, []string{"urgent -100123"}) {
				t.Fatalf("deliveries %v", got)
			}
			d := ds[0]
			sub := chat.Submission{Form: "contact", ID: res.Submission.ID.String(), Received: testNow,
				Fields: []chat.Field{{Name: "topic", Value: "other"}, {Name: "message", Value: "urgent: <!channel> & call me"}},
				Link:   "https://admin.example.com/inbox/submissions/" + res.Submission.ID.String()}
			want, err := telegram.Render("-100123", sub)
			if err != nil {
				t.Fatal(err)
			}
			var p outbox.Payload
			if err := json.Unmarshal(d.Payload, &p); err != nil {
				t.Fatal(err)
			}
			if p.To != "-100123" || string(p.Body) != string(want) || strings.Contains(string(d.Payload), "SECRET-TOKEN") {
				t.Fatalf("payload %s\nwant body %s", d.Payload, want)
			}
			if d.MaxAttempts != outbox.DefaultEmailAttempts || d.Channel != outbox.ChannelTelegram {
				t.Fatalf("delivery %+v, want the email budget %d", d, outbox.DefaultEmailAttempts)
			}

			// The fallback's Slack body, with the visitor's <!channel> escaped.
			res = mustParse(t, c, postForm(form("topic", "other", "message", "<!channel> hi")))
			if _, err := outbox.Accept(context.Background(), store, res.Submission, res.Deliveries); err != nil {
				t.Fatal(err)
			}
			ds, err = store.ListDeliveries(context.Background(), res.Submission.ID)
			if err != nil || len(ds) != 1 {
				t.Fatalf("deliveries %+v, %v", ds, err)
			}
			sub.ID, sub.Link = res.Submission.ID.String(), "https://admin.example.com/inbox/submissions/"+res.Submission.ID.String()
			sub.Fields[1].Value = "<!channel> hi"
			want, _ = slack.Render(sub)
			p = outbox.Payload{}
			if err := json.Unmarshal(ds[0].Payload, &p); err != nil {
				t.Fatal(err)
			}
			if p.URL != slackURL || string(p.Body) != string(want) || strings.Contains(string(p.Body), "<!channel>") {
				t.Fatalf("slack payload %s\nwant body %s", ds[0].Payload, want)
			}
		})
	}
}

// TestNoRouteMatchedOnEveryStore: on SQLite and PostgreSQL, a post no guard lets through
// (and no fallback) is stored accepted with the reason no_route_matched, a
// submission.unrouted event and no delivery; one that matches is stored with the
// deliveries of exactly the routes whose guards hold.
func TestNoRouteMatchedOnEveryStore(t *testing.T) {
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := open(t)
			c := routedConfig(t, false)
			res := mustParse(t, c, postForm(form("topic", "other", "message", "hello")))
			if _, err := outbox.Accept(ctx, store, res.Submission, res.Deliveries); err != nil {
				t.Fatal(err)
			}
			sub, err := store.GetSubmission(ctx, res.Submission.ID)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := store.ListDeliveries(ctx, res.Submission.ID)
			if err != nil {
				t.Fatal(err)
			}
			if sub.Status != outbox.SubmissionAccepted || sub.Reason != outbox.ReasonNoRouteMatched || len(ds) != 0 {
				t.Fatalf("unrouted: status %s reason %q, %d deliveries", sub.Status, sub.Reason, len(ds))
			}
			evs, err := store.ListEvents(ctx, outbox.EventUnrouted, 10)
			if err != nil || len(evs) != 1 || evs[0].SubmissionID != res.Submission.ID {
				t.Fatalf("unrouted events %+v, %v", evs, err)
			}

			res = mustParse(t, c, postForm(form("topic", "sales", "message", "URGENT please")))
			if _, err := outbox.Accept(ctx, store, res.Submission, res.Deliveries); err != nil {
				t.Fatal(err)
			}
			ds, err = store.ListDeliveries(ctx, res.Submission.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := routesOf(ds); !slices.Equal(got, []string{"sales sales@example.com", "urgent -100123"}) {
				t.Fatalf("routed deliveries %v", got)
			}
		})
	}
}
