package intake

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// writeTemplate writes src to a file in a test directory and returns its path.
func writeTemplate(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var declared = []FieldSpec{{Name: "name", Required: true}, {Name: "email", Email: true}, {Name: "topic"},
	{Name: "cv", File: true}}

// TestReferenceErrorsNameTheFieldsAndANearMiss: a form that declares its fields refuses
// at provision every reference to another name, naming where it is, the declared fields
// and the near miss; in a template, the file, line and column.
func TestReferenceErrorsNameTheFieldsAndANearMiss(t *testing.T) {
	body := writeTemplate(t, "lead.txt", "Lead\n{{truncate 80 (field \"nmae\")}}\n")
	chatText := writeTemplate(t, "chat.txt", "{{if field \"topic\"}}{{field \"topci\" | upper}}{{end}}")
	email := func(r Route) Route { r.Channel, r.To = outbox.ChannelEmail, []string{"a@example.com"}; return r }
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"guard", Config{Routes: []Route{email(Route{When: []Guard{{Field: "topc", Op: GuardIs, Values: []string{"sales"}}}})}},
			`notify email: when: field "topc" is not declared in form f (declared: name, email, topic); did you mean "topic"?`},
		{"subject", Config{Routes: []Route{email(Route{Subject: "New enquiry from {field.nmae}"})}},
			`notify email: subject: field "nmae" is not declared in form f (declared: name, email, topic); did you mean "name"?`},
		{"no near miss", Config{Routes: []Route{email(Route{Subject: "{field.company}"})}},
			`field "company" is not declared in form f (declared: name, email, topic)` + "\x00"},
		{"body template", Config{Routes: []Route{email(Route{BodyText: body})}},
			`notify email: body_text (template ` + body + `:2:`},
		{"chat template", Config{Routes: []Route{{Channel: outbox.ChannelSlack, URL: "https://hooks.slack.example/x", Text: chatText}}},
			`notify slack: text (template ` + chatText + `:1:`},
		{"autoreply subject", Config{Routes: []Route{email(Route{})}, Autoreply: &Autoreply{From: "hello@example.com",
			Subject: "Thanks {field.nam}", BodyText: writeTemplate(t, "a.txt", "Hi")}},
			`autoreply: subject: field "nam" is not declared`},
		{"special field", Config{Routes: []Route{email(Route{Subject: "{field._subject}"})}},
			`field "_subject": names starting with _ are instructions`},
		{"honeypot", Config{Routes: []Route{email(Route{Subject: "{field._gotcha}"})}}, `field "_gotcha"`},
		{"file field", Config{Routes: []Route{email(Route{Subject: "{field.cv}"})}}, `field "cv" is a file upload`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			c.Form, c.Fields, c.MaxBodyBytes = "f", declared, 1<<20
			err := c.Provision()
			want, exact := strings.CutSuffix(tc.want, "\x00")
			if err == nil || !strings.Contains(err.Error(), want) || (exact && strings.Contains(err.Error(), "did you mean")) {
				t.Fatalf("provision: %v\nwant it to contain %q", err, want)
			}
		})
	}
}

// TestUndeclaredFormWarnsPerReference: a form without `field` lines provisions, with one
// warning per reference it cannot check; names that can never hold a value still fail.
func TestUndeclaredFormWarnsPerReference(t *testing.T) {
	body := writeTemplate(t, "lead.txt", "{{field \"message\"}}")
	c := &Config{Form: "f", Routes: []Route{{Channel: outbox.ChannelEmail, To: []string{"a@example.com"},
		Subject: "From {field.name}", BodyText: body,
		When: []Guard{{Field: "topic", Op: GuardMatches, Values: []string{"."}}}}, {Channel: outbox.ChannelWebhook, URL: "https://x.example/h", Fallback: true}}}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	w := c.Warnings()
	if len(w) != 3 || !strings.Contains(w[0], `notify email: when reads field "topic", but form f declares no fields`) ||
		!strings.Contains(w[1], `notify email: subject reads field "name"`) || !strings.Contains(w[2], `body_text (template `+body+`:1:`) {
		t.Fatalf("warnings %q", w)
	}
	c.Routes[0].Subject = "{field._replyto}"
	if err := c.Provision(); err == nil || !strings.Contains(err.Error(), `field "_replyto"`) {
		t.Fatalf("provision: %v", err)
	}
}

// TestCoverageWarningNamesTheUncoveredCase: guards that leave a case unrouted, with no
// fallback, are a warning naming the case; a fallback, a route without guards or a
// required one_of field that every route covers is none.
func TestCoverageWarningNamesTheUncoveredCase(t *testing.T) {
	guard := func(field string, op string, vs ...string) []Guard {
		return []Guard{{Field: field, Op: op, Values: vs}}
	}
	mail := func(g []Guard) Route {
		return Route{Channel: outbox.ChannelEmail, To: []string{"a@example.com"}, When: g}
	}
	for _, tc := range []struct {
		name   string
		fields []FieldSpec
		routes []Route
		want   string
	}{
		{"two values", nil, []Route{mail(guard("topic", GuardIs, "sales")), mail(guard("topic", GuardIs, "support"))},
			"a post where topic is neither sales nor support takes no route"},
		{"one value", nil, []Route{mail(guard("topic", GuardIs, "sales"))}, "a post where topic is not sales takes no route"},
		{"mixed", nil, []Route{mail(guard("topic", GuardIs, "sales")), mail(guard("urgent", GuardMatches, "yes"))},
			"a post where none of these holds: topic is sales; urgent matches yes takes no route"},
		{"one_of left", []FieldSpec{{Name: "topic", Required: true, OneOf: []string{"sales", "support", "press"}}},
			[]Route{mail(guard("topic", GuardIn, "sales", "support"))}, "a post where topic is press takes no route"},
		{"one_of optional", []FieldSpec{{Name: "topic", OneOf: []string{"sales"}}},
			[]Route{mail(guard("topic", GuardIs, "sales"))}, `a post where topic is "" (left empty) takes no route`},
		{"one_of covered", []FieldSpec{{Name: "topic", Required: true, OneOf: []string{"sales", "support"}}},
			[]Route{mail(guard("topic", GuardIs, "sales")), mail(guard("topic", GuardIs, "support"))}, ""},
		{"fallback", nil, []Route{mail(guard("topic", GuardIs, "sales")), {Channel: outbox.ChannelWebhook, URL: "https://x.example/h", Fallback: true}}, ""},
		{"unguarded", nil, []Route{mail(guard("topic", GuardIs, "sales")), {Channel: outbox.ChannelWebhook, URL: "https://x.example/h"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Form: "f", Fields: tc.fields, Routes: tc.routes}
			if err := c.Provision(); err != nil {
				t.Fatal(err)
			}
			var got string
			for _, w := range c.Warnings() {
				if strings.Contains(w, "takes no route") {
					got = w
				}
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("warning %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCheckRouted: no route is an error unless store_only, and store_only with a route
// is one too.
func TestCheckRouted(t *testing.T) {
	c := &Config{Form: "f"}
	if err := c.CheckRouted(); err == nil || !strings.Contains(err.Error(), "no notify route in form f") {
		t.Fatalf("no route: %v", err)
	}
	c.StoreOnly = true
	if err := c.CheckRouted(); err != nil {
		t.Fatalf("store_only: %v", err)
	}
	c.Routes = []Route{{Channel: outbox.ChannelWebhook, URL: "https://x.example/h"}}
	if err := c.CheckRouted(); err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Fatalf("store_only with a route: %v", err)
	}
}

// TestTemplateEmptyEventPerDelivery: a printed field the post lacks gives one
// template.empty event per delivery of the route, naming the route, option and field
// (no value), and the form's counter counts it once stored; a declared optional field
// left out, or a field sent empty, gives none.
func TestTemplateEmptyEventPerDelivery(t *testing.T) {
	chat := writeTemplate(t, "chat.txt", `{{field "message"}}`)
	c := &Config{Form: "te-form", IPHashKey: []byte("k"), Fields: []FieldSpec{{Name: "name"}, {Name: "message"}, {Name: "company"}},
		Mode: ModeMonitor, Routes: []Route{
			{Channel: outbox.ChannelEmail, To: []string{"a@example.com", "b@example.com"}, Subject: "{field.name} at {field.company}"},
			{Channel: outbox.ChannelSlack, URL: "https://hooks.slack.example/x", Text: chat}}}
	c.Fields[0].Required = true
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, c, postForm(form("message", "")))
	var got []TemplateEmpty
	for _, ev := range res.Submission.Events {
		if ev.Kind != outbox.EventTemplateEmpty {
			continue
		}
		var te TemplateEmpty
		if err := json.Unmarshal(ev.Data, &te); err != nil {
			t.Fatal(err)
		}
		if ev.DeliveryID.String() != te.Delivery {
			t.Fatalf("event delivery %s, data %s", ev.DeliveryID, te.Delivery)
		}
		got = append(got, te)
	}
	if len(got) != 2 || got[0].Delivery == got[1].Delivery || got[0].Delivery != res.Deliveries[0].ID.String() ||
		got[1].Delivery != res.Deliveries[1].ID.String() {
		t.Fatalf("events %+v, deliveries %d", got, len(res.Deliveries))
	}
	for _, te := range got {
		if te.Form != "te-form" || te.Route != "email" || te.Option != "subject" || te.Field != "name" {
			t.Fatalf("event %+v", te)
		}
	}
	before := CountersFor("te-form").TemplateEmpty("email").Load()
	c.noteTemplateEmpty(zap.NewNop(), res.Submission)
	if n := CountersFor("te-form").TemplateEmpty("email").Load(); n != before+2 {
		t.Fatalf("counter %d, want %d", n, before+2)
	}
}

// TestAutoreplyWithoutEmailFieldWarns: a form that declares its fields but no `email`
// loads with a warning that only _replyto posts get the autoreply; declaring it silences
// the warning.
func TestAutoreplyWithoutEmailFieldWarns(t *testing.T) {
	body := writeTemplate(t, "a.txt", "Thanks")
	c := &Config{Form: "f", Fields: []FieldSpec{{Name: "name"}},
		Routes:    []Route{{Channel: outbox.ChannelEmail, To: []string{"a@example.com"}}},
		Autoreply: &Autoreply{From: "hello@example.com", Subject: "Thanks", BodyText: body}}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "only posts that send _replyto get a reply") {
		t.Fatalf("warnings %q", w)
	}
	c.Fields = append(c.Fields, FieldSpec{Name: "email", Email: true})
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	if w := c.Warnings(); len(w) != 0 {
		t.Fatalf("warnings %q", w)
	}
}
