package intake

import (
	"strings"
	"testing"
)

// The parser-time checks accept what a config should hold and name the bad value in
// their error, which the Caddyfile parser prefixes with the option and suffixes with
// the line.
func TestConfigValueChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func(string) error
		value string
		want  string // "" when the value is accepted
	}{
		{"recipient", CheckRecipient, "ops@example.com", ""},
		{"recipient", CheckRecipient, "Sales <sales@example.com>", `"Sales <sales@example.com>" is not a bare email address like ops@example.com`},
		{"recipient", CheckRecipient, "sales.example.com", `"sales.example.com" is not a bare email address`},
		{"recipient", CheckRecipient, "ops@example.com\r\nBcc: x@example.com", "is not a bare email address"},
		{"url", CheckHTTPURL, "https://hooks.example.com/x", ""},
		{"url", CheckHTTPURL, "ftp://hooks.example.com/x", `"ftp://hooks.example.com/x" is not an absolute http(s) URL`},
		{"url", CheckHTTPURL, "/relative", `"/relative" is not an absolute http(s) URL`},
		{"url", CheckHTTPURL, "http://[::1", `"http://[::1" is not a URL: `},
		{"chat id", CheckTelegramChatID, "-100123", ""},
		{"chat id", CheckTelegramChatID, "@formoutbox", ""},
		{"chat id", CheckTelegramChatID, "sales-team", `telegram chat id "sales-team": want a number such as -100123 or a public @channelname`},
		{"inbox", CheckInboxURL, "https://example.com/inbox", ""},
		{"inbox", CheckInboxURL, "/inbox", `"/inbox": want an absolute http(s) URL without query, such as https://example.com/inbox`},
		{"inbox", CheckInboxURL, "https://example.com/inbox?x=1", "without query"},
		{"inbox", CheckInboxURL, "https://example.com/inbox#top", "without query"},
	} {
		err := tc.check(tc.value)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s %q: %v, want accepted", tc.name, tc.value, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: %v, want an error containing %q", tc.name, tc.value, err, tc.want)
		}
	}
}
