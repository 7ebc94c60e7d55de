package senders

import (
	"context"
	"path/filepath"
	"testing"
)

// SMTP joins the failover chain after SES and Resend, so adding it changes nothing while
// they work; alone, it is the only provider.
func TestEmailProviderPutsSMTPLast(t *testing.T) {
	smtpOnly := &SMTP{Address: "127.0.0.1:2525", TLS: "none"}
	for _, tc := range []struct {
		ec   Email
		want string
	}{
		{Email{SMTP: smtpOnly}, "smtp"},
		{Email{Resend: &Resend{APIKey: "re_x"}, SMTP: smtpOnly}, "resend,smtp"},
		{Email{SES: &SES{Region: "eu-west-1"}, Resend: &Resend{APIKey: "re_x"}, SMTP: smtpOnly}, "ses,resend,smtp"},
	} {
		tc.ec.From = "forms@example.com"
		p, err := NewEmail(context.Background(), tc.ec)
		if err != nil {
			t.Fatalf("%s: %v", tc.want, err)
		}
		if p.Name() != tc.want {
			t.Errorf("providers %q, want %q", p.Name(), tc.want)
		}
	}
	if _, err := NewEmail(context.Background(), Email{From: "forms@example.com", SMTP: smtpOnly, File: true, MailDir: t.TempDir()}); err == nil {
		t.Error("file combined with smtp was accepted")
	}
	missing := &SMTP{Address: "127.0.0.1:2525", CAFile: filepath.Join(t.TempDir(), "missing.pem")}
	if _, err := NewEmail(context.Background(), Email{From: "forms@example.com", SMTP: missing}); err == nil {
		t.Error("a missing ca_file was accepted")
	}
}
