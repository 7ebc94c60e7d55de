package outbox_test

import (
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TestDestinationKeysHideSecrets: a chat webhook URL is its own credential and a webhook
// URL may carry a token: neither reaches the key or the label, which name the host and a
// hash; every delivery of the e-mail chain shares one key; a key typed back parses.
func TestDestinationKeysHideSecrets(t *testing.T) {
	cases := []struct {
		d       outbox.Delivery
		prefix  string
		label   string
		secrets []string
	}{
		{outbox.Delivery{Channel: outbox.ChannelWebhook, Recipient: "https://crm.example.com/hook?token=s3cr3t"}, "webhook:", "crm.example.com", []string{"s3cr3t", "/hook"}},
		{outbox.Delivery{Channel: outbox.ChannelSlack, Recipient: "https://hooks.slack.com/services/T000/B000/XXXXSECRET"}, "slack:", "hooks.slack.com", []string{"XXXXSECRET", "T000"}},
		{outbox.Delivery{Channel: outbox.ChannelTelegram, Recipient: "-100123"}, "telegram:-100123", "-100123", nil},
		{outbox.Delivery{Channel: outbox.ChannelEmail, Recipient: "sales@example.com"}, "email:ses,resend", "ses,resend", []string{"sales@"}},
		{outbox.Delivery{Channel: outbox.ChannelAutoreply, Recipient: "visitor@example.com"}, "email:ses,resend", "ses,resend", []string{"visitor@"}},
	}
	for _, tc := range cases {
		dest := outbox.DestinationOf(tc.d, "ses,resend")
		if !strings.HasPrefix(dest.Key, tc.prefix) || !strings.Contains(dest.Label, tc.label) {
			t.Errorf("%s: key %q label %q, want prefix %q and %q in the label", tc.d.Channel, dest.Key, dest.Label, tc.prefix, tc.label)
		}
		for _, s := range tc.secrets {
			if strings.Contains(dest.Key, s) || strings.Contains(dest.Label, s) {
				t.Errorf("%s: key %q or label %q shows %q", tc.d.Channel, dest.Key, dest.Label, s)
			}
		}
		back, err := outbox.ParseDestinationKey(dest.Key)
		if err != nil || back.Key != dest.Key || back.Channel != dest.Channel {
			t.Errorf("parse %q: %+v, %v", dest.Key, back, err)
		}
	}
	for _, bad := range []string{"", "webhook", "webhook:", "webhook:xyz", "fax:123", "telegram:1 2"} {
		if _, err := outbox.ParseDestinationKey(bad); err == nil {
			t.Errorf("parse %q: no error", bad)
		}
	}
}
