package caddyconf

import (
	"encoding/json"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

func TestFormFromMatcher(t *testing.T) {
	set := func(matchers map[string]any) caddy.ModuleMap {
		m := caddy.ModuleMap{}
		for k, v := range matchers {
			raw, _ := json.Marshal(v)
			m[k] = raw
		}
		return m
	}
	for _, tc := range []struct {
		name string
		set  caddy.ModuleMap
		want string
	}{
		{"simple path", set(map[string]any{"path": []string{"/contact"}}), "contact"},
		{"trailing slash", set(map[string]any{"path": []string{"/contact/"}}), "contact"},
		{"no matcher", nil, ""},
		{"wildcard", set(map[string]any{"path": []string{"/forms/*"}}), ""},
		{"two segments", set(map[string]any{"path": []string{"/forms/contact"}}), ""},
		{"two paths", set(map[string]any{"path": []string{"/a", "/b"}}), ""},
		{"root", set(map[string]any{"path": []string{"/"}}), ""},
		{"dots", set(map[string]any{"path": []string{"/.."}}), ""},
		{"path and method", set(map[string]any{"path": []string{"/contact"}, "method": []string{"POST"}}), ""},
	} {
		got, ok := formFromMatcher(tc.set)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: got %q %v, want %q", tc.name, got, ok, tc.want)
		}
	}
}

// Resolved hands internal/senders the resolved, trimmed values and leaves the config as
// written, so the running config and `caddy adapt` keep the placeholder, not the secret.
func TestEmailResolvedKeepsPlaceholdersInConfig(t *testing.T) {
	ec := &EmailConfig{
		SMTP:   &SMTPConfig{Address: "{env.SMTP_ADDR}", Username: "u", Password: "{env.SMTP_PASSWORD}", Rate: "5/s"},
		Resend: &ResendConfig{APIKey: "{env.RESEND_API_KEY}"},
	}
	vals := map[string]string{"{env.SMTP_ADDR}": " smtp.example.com:587 ", "{env.SMTP_PASSWORD}": "s3cret", "{env.RESEND_API_KEY}": "re_key"}
	resolve := func(s string) string {
		if v, ok := vals[s]; ok {
			return v
		}
		return s
	}
	got := ec.Resolved("Forms <forms@example.com>", "/mail", resolve)
	if got.From != "Forms <forms@example.com>" || got.MailDir != "/mail" || got.File || got.SES != nil {
		t.Errorf("resolved %+v", got)
	}
	if got.SMTP == nil || got.SMTP.Address != "smtp.example.com:587" || got.SMTP.Password != "s3cret" || got.SMTP.Username != "u" || got.SMTP.Rate != "5/s" {
		t.Errorf("smtp resolved to %+v", got.SMTP)
	}
	if got.Resend == nil || got.Resend.APIKey != "re_key" {
		t.Errorf("resend resolved to %+v", got.Resend)
	}
	if ec.SMTP.Password != "{env.SMTP_PASSWORD}" || ec.Resend.APIKey != "{env.RESEND_API_KEY}" {
		t.Errorf("secrets written back into the config: %+v %+v", ec.SMTP, ec.Resend)
	}
	if got := (*EmailConfig)(nil).Resolved("a@example.com", "/m", resolve); got.SES != nil || got.Resend != nil || got.SMTP != nil || got.From != "a@example.com" {
		t.Errorf("no email block resolved to %+v", got)
	}
}
