package intake

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TestPlanCanaryTakesEveryRouteButDigests: a guarded route, a fallback and a chat route
// each get a pending delivery, the digest route none, and no autoreply is planned; the
// submission is an accepted test with the declared fields filled in.
func TestPlanCanaryTakesEveryRouteButDigests(t *testing.T) {
	c := &Config{
		Form:   "contact",
		Fields: []FieldSpec{{Name: "name", Required: true}, {Name: "email", Email: true}, {Name: "topic", OneOf: []string{"sales", "support"}}},
		Routes: []Route{
			{Name: "sales", Channel: outbox.ChannelEmail, To: []string{"sales@example.com"}, Subject: "Lead from {field.name}",
				When: []Guard{{Field: "topic", Op: GuardIs, Values: []string{"never"}}}},
			{Name: "other", Channel: outbox.ChannelEmail, To: []string{"desk@example.com"}, Fallback: true},
			{Name: "crm", Channel: outbox.ChannelWebhook, URL: "https://crm.example.com/hook", Secret: "whsec_c2VjcmV0"},
			{Name: "chat", Channel: outbox.ChannelSlack, URL: "https://hooks.slack.example/T1"},
			{Name: "daily", Channel: outbox.ChannelEmail, To: []string{"boss@example.com"}, Digest: "daily at 08:00"},
		},
		Autoreply: &Autoreply{From: "Example <hello@example.com>", Subject: "Thanks", BodyText: "testdata/templates/autoreply.txt"},
		IPHashKey: []byte("k"),
	}
	if err := c.Provision(); err != nil {
		t.Fatalf("provision: %v", err)
	}
	id := uuid.Must(uuid.NewV7())
	sub, ds, err := c.PlanCanary(id, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if sub.ID != id || !sub.Test || sub.Status != outbox.SubmissionAccepted || sub.Reason != "" || !sub.CreatedAt.Equal(testNow) ||
		sub.Meta.UserAgent != CanaryUserAgent {
		t.Errorf("canary submission = %+v, want accepted test %s at %s", sub, id, testNow)
	}
	if want := (outbox.Fields{{Name: "name", Value: "canary"}, {Name: "email", Value: "canary@example.invalid"}, {Name: "topic", Value: "sales"}}); !fieldsEqual(sub.Data, want) {
		t.Errorf("canary fields = %+v, want %+v", sub.Data, want)
	}
	var got []string
	for _, d := range ds {
		if d.Status != outbox.DeliveryPending || d.SubmissionID != id {
			t.Errorf("delivery %+v: want pending, of the canary", d)
		}
		got = append(got, d.Route+" "+d.Recipient)
	}
	want := []string{"sales sales@example.com", "other desk@example.com", "crm https://crm.example.com/hook", "chat https://hooks.slack.example/T1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("canary routes = %q, want %q (no digest route, no autoreply)", got, want)
	}
	var mail outbox.Payload
	if err := json.Unmarshal(ds[0].Payload, &mail); err != nil || mail.Subject != "[test] Lead from canary" {
		t.Errorf("e-mail subject = %q (%v), want the template's, marked [test]", mail.Subject, err)
	}
	var hook outbox.Payload
	if err := json.Unmarshal(ds[2].Payload, &hook); err != nil || !strings.Contains(string(hook.Body), `"test":true`) {
		t.Errorf("webhook body = %s (%v), want \"test\":true", hook.Body, err)
	}
	var chat outbox.Payload
	if err := json.Unmarshal(ds[3].Payload, &chat); err != nil || !strings.Contains(string(chat.Body), `"text":"[test] New submission to form contact"`) {
		t.Errorf("slack body = %s (%v), want its title marked [test]", chat.Body, err)
	}
}

// TestLeadIsNotMarkedTest: an ordinary post's subject, webhook body and chat title carry
// no test mark, a `_test` post's do.
func TestLeadIsNotMarkedTest(t *testing.T) {
	c := contactConfig(t)
	for _, test := range []bool{false, true} {
		pairs := []string{"name", "Ada", "email", "ada@example.com", "message", "Hello"}
		if test {
			pairs = append(pairs, "_test", "1")
		}
		res := mustParse(t, c, postForm(form(pairs...)))
		var mail, hook outbox.Payload
		if err := json.Unmarshal(res.Deliveries[0].Payload, &mail); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(res.Deliveries[len(res.Deliveries)-1].Payload, &hook); err != nil {
			t.Fatal(err)
		}
		marked := strings.HasPrefix(mail.Subject, "[test] ")
		flagged := strings.Contains(string(hook.Body), `"test":true`)
		if marked != test || flagged != test {
			t.Errorf("_test=%v: subject %q, webhook body %s; want the mark and the flag exactly on the test post", test, mail.Subject, hook.Body)
		}
	}
}

func fieldsEqual(a, b outbox.Fields) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCanaryFillsEveryPrintedField: on a form without a field spec, the fields the
// routes' messages print are filled in, so no template renders a blank and the canary
// records no template.empty event.
func TestCanaryFillsEveryPrintedField(t *testing.T) {
	c := &Config{Form: "contact", IPHashKey: []byte("k"), Routes: []Route{
		{Name: "sales", Channel: outbox.ChannelEmail, To: []string{"sales@example.com"}, Subject: "Lead from {field.name}"},
	}}
	if err := c.Provision(); err != nil {
		t.Fatalf("provision: %v", err)
	}
	sub, ds, err := c.PlanCanary(uuid.Must(uuid.NewV7()), testNow)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := sub.Data.Get("name"); !ok || v != "canary" {
		t.Errorf("canary fields = %+v, want name=canary", sub.Data)
	}
	for _, ev := range sub.Events {
		if ev.Kind == outbox.EventTemplateEmpty {
			t.Errorf("canary recorded %s: %s", ev.Kind, ev.Data)
		}
	}
	var p outbox.Payload
	if err := json.Unmarshal(ds[0].Payload, &p); err != nil || p.Subject != "[test] Lead from canary" {
		t.Errorf("subject = %q (%v)", p.Subject, err)
	}
}
