package intake

import (
	"fmt"
	"net/url"
)

// The checks below are the value checks of a form's config that the Caddyfile parser
// (internal/caddyconf/caddyfile.go) runs on each line, so that an error names that
// line; Provision checks the same values again for configs written as JSON.

// CheckRecipient accepts a bare address such as ops@example.com and nothing else:
// recipients are addresses, and a display name or comment here is more likely a typo
// than an intention.
func CheckRecipient(s string) error {
	if !validEmail(s) {
		return fmt.Errorf("%q is not a bare email address like ops@example.com", s)
	}
	return nil
}

// CheckHTTPURL accepts absolute http(s) URLs with a host: webhook, chat and captcha
// endpoints.
func CheckHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// CheckTelegramChatID accepts what a Bot API chat_id may be: a number (negative for
// groups) or a public channel's @username. A chat id is no secret, so the error repeats
// it.
func CheckTelegramChatID(s string) error {
	if !telegramChatID.MatchString(s) {
		return fmt.Errorf("telegram chat id %q: want a number such as -100123 or a public @channelname", s)
	}
	return nil
}

// CheckInboxURL accepts the operator's inbox address (Config.InboxURL): an absolute
// http(s) URL without query or fragment, since notification emails append a
// submission's path to it and are read far from this server.
func CheckInboxURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: want an absolute http(s) URL without query, such as https://example.com/inbox", s)
	}
	return nil
}
