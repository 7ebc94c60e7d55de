package intake

import (
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func TestProvisionDefaults(t *testing.T) {
	c := &Config{Form: "contact", Routes: []Route{
		{Name: "email-2", Channel: outbox.ChannelEmail, To: []string{"a@example.com"}},
		{Channel: outbox.ChannelEmail, To: []string{"b@example.com"}},
		{Channel: outbox.ChannelEmail, To: []string{"c@example.com"}},
		{Channel: outbox.ChannelWebhook, URL: "http://localhost:9000/hook"},
	}}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	if c.Honeypot != "_gotcha" || c.MaxBodyBytes != 256<<10 || c.MaxFields != 100 || c.MaxFieldLength != 10000 || c.Mode != ModeEnforce {
		t.Errorf("defaults = %q %d %d %d %q", c.Honeypot, c.MaxBodyBytes, c.MaxFields, c.MaxFieldLength, c.Mode)
	}
	var names []string
	for _, r := range c.Routes {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, " "); got != "email-2 email email-3 webhook" {
		t.Errorf("route names = %s, want unique defaults that skip taken names", got)
	}
	if len(c.IPHashKey) != 32 {
		t.Errorf("no random IP hash key made: %d bytes", len(c.IPHashKey))
	}
	d := &Config{Form: "contact"}
	if err := d.Provision(); err != nil {
		t.Fatal(err)
	}
	if string(d.IPHashKey) == string(c.IPHashKey) {
		t.Error("two configs got the same random key")
	}
}

func TestProvisionRejects(t *testing.T) {
	email := func(to ...string) Route { return Route{Channel: outbox.ChannelEmail, To: to} }
	hook := func(u string) Route { return Route{Channel: outbox.ChannelWebhook, URL: u} }
	tests := []struct {
		name string
		c    Config
		want string
	}{
		{"no form", Config{}, "intake: form name is empty"},
		{"bad mode", Config{Form: "f", Mode: "strict"}, `intake: form f: mode "strict": want "enforce" or "monitor"`},
		{"empty field name", Config{Form: "f", Fields: []FieldSpec{{Name: " "}}}, "intake: form f: field 1: name is empty"},
		{"duplicate field", Config{Form: "f", Fields: []FieldSpec{{Name: "a"}, {Name: "a"}}}, `intake: form f: field "a": listed twice`},
		{"reserved field", Config{Form: "f", Fields: []FieldSpec{{Name: "_replyto"}}}, `intake: form f: field "_replyto": names starting with _ are reserved`},
		{"bad pattern, quoted as written", Config{Form: "f", Fields: []FieldSpec{{Name: "zip", Pattern: "[0-9"}}}, `intake: form f: field "zip": pattern "[0-9" is not a valid regular expression: missing closing ]: ` + "`[0-9`"},
		{"pattern valid only once anchored", Config{Form: "f", Fields: []FieldSpec{{Name: "a", Pattern: "x)|(y"}}}, `intake: form f: field "a": pattern "x)|(y" is not a valid regular expression: unexpected ): ` + "`x)|(y`"},
		{"min above max", Config{Form: "f", Fields: []FieldSpec{{Name: "a", MinLength: 5, MaxLength: 2}}}, `intake: form f: field "a": min_length 5 is above max_length 2`},
		{"negative max length", Config{Form: "f", Fields: []FieldSpec{{Name: "a", MaxLength: -1}}}, `intake: form f: field "a": max_length must not be negative`},
		{"bad recipient", Config{Form: "f", Routes: []Route{email("sales@example.com", "not an address")}}, `intake: form f: notify email: "not an address" is not a valid email address`},
		{"display-name recipient", Config{Form: "f", Routes: []Route{email("Sales <sales@example.com>")}}, `intake: form f: notify email: "Sales <sales@example.com>" is not a valid email address`},
		{"no recipient", Config{Form: "f", Routes: []Route{email()}}, "intake: form f: notify email: email needs at least one recipient"},
		{"repeated recipient", Config{Form: "f", Routes: []Route{email("a@example.com", "A@example.com")}}, `intake: form f: notify email: recipient "A@example.com" listed twice`},
		{"relative webhook", Config{Form: "f", Routes: []Route{hook("/hooks")}}, `intake: form f: notify webhook: webhook URL "/hooks" must be an absolute http(s) URL`},
		{"ftp webhook", Config{Form: "f", Routes: []Route{hook("ftp://example.com/x")}}, `intake: form f: notify webhook: webhook URL "ftp://example.com/x" must be an absolute http(s) URL`},
		{"duplicate route names", Config{Form: "f", Routes: []Route{{Name: "x", Channel: outbox.ChannelEmail, To: []string{"a@example.com"}}, {Name: "x", Channel: outbox.ChannelWebhook, URL: "https://e.com"}}}, `intake: form f: notify: route name "x" used twice`},
		{"unknown channel", Config{Form: "f", Routes: []Route{{Channel: "sms", To: []string{"123"}}}}, `intake: form f: notify sms: unknown channel "sms" (want email, webhook, telegram, slack, discord or teams)`},
		{"subject with a line break", Config{Form: "f", Routes: []Route{{Channel: outbox.ChannelEmail, To: []string{"a@example.com"}, Subject: "a\nBcc: x"}}}, "intake: form f: notify email: subject contains control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Provision()
			if err == nil || err.Error() != tt.want {
				t.Errorf("Provision() = %v, want %q", err, tt.want)
			}
		})
	}
}
