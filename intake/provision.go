package intake

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Provision fills zero fields with their defaults and validates the config, so that a
// bad Caddyfile fails at load time rather than on the first visitor's post. Form must be
// set by the caller (the Caddy layer defaults it to the directive's path).
func (c *Config) Provision() error {
	if strings.TrimSpace(c.Form) == "" {
		return fmt.Errorf("intake: form name is empty")
	}
	if hasControl(c.Form) {
		return fmt.Errorf("intake: form name %q contains control characters", c.Form)
	}
	if c.Form == outbox.AlertsForm {
		return fmt.Errorf("intake: form name %q is reserved for owner alerts", c.Form)
	}
	if c.Honeypot == "" {
		c.Honeypot = DefaultHoneypot
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxFields == 0 {
		c.MaxFields = DefaultMaxFields
	}
	// The limit of any one value is at least every field's max_length, so a spec asking
	// for longer values is honoured unless the operator set a lower max_field_length,
	// which provisionFields refuses.
	if c.MaxFieldLength == 0 {
		c.MaxFieldLength = DefaultMaxFieldLen
		for _, f := range c.Fields {
			c.MaxFieldLength = max(c.MaxFieldLength, f.MaxLength)
		}
	}
	if c.Mode == "" {
		c.Mode = ModeEnforce
	}
	if c.MaxBodyBytes < 0 || c.MaxFields < 0 || c.MaxFieldLength < 0 {
		return fmt.Errorf("intake: form %s: max_body_bytes, max_fields and max_field_length must not be negative", c.Form)
	}
	for _, f := range c.Fields {
		if f.File && f.MaxFileSize > c.MaxBodyBytes {
			// Such a file would be refused with 413 before its rule could store it.
			return fmt.Errorf("intake: form %s: field %s: max_size %d is above the body bound %d: raise max_body",
				c.Form, f.Name, f.MaxFileSize, c.MaxBodyBytes)
		}
	}
	if err := c.Canary.Check(); err != nil {
		return fmt.Errorf("intake: form %s: %w", c.Form, err)
	}
	if c.Mode != ModeEnforce && c.Mode != ModeMonitor {
		return fmt.Errorf("intake: form %s: mode %q: want %q or %q", c.Form, c.Mode, ModeEnforce, ModeMonitor)
	}
	if hasControl(c.Honeypot) || strings.TrimSpace(c.Honeypot) != c.Honeypot {
		return fmt.Errorf("intake: form %s: honeypot name %q is not a plain field name", c.Form, c.Honeypot)
	}
	if c.Redirect != "" {
		if hasControl(c.Redirect) {
			return fmt.Errorf("intake: form %s: redirect contains control characters", c.Form)
		}
		if _, err := url.Parse(c.Redirect); err != nil {
			return fmt.Errorf("intake: form %s: redirect: %w", c.Form, err)
		}
	}
	for _, r := range c.Routes {
		if (r.Attach || r.AttachMax != 0) && (r.Channel != outbox.ChannelEmail || r.AttachMax < 0) {
			return fmt.Errorf("intake: form %s: route %s: attach is an e-mail option with a positive size", c.Form, r.Name)
		}
		switch r.Content {
		case "", ContentFull:
		case ContentLink:
			if c.InboxURL == "" {
				return fmt.Errorf("intake: form %s: route %s: content link needs inbox_url in the form_outbox global options", c.Form, r.Name)
			}
		default:
			return fmt.Errorf("intake: form %s: route %s: content %q: want full or link", c.Form, r.Name, r.Content)
		}
	}
	if err := c.provisionFields(); err != nil {
		return fmt.Errorf("intake: form %s: %w", c.Form, err)
	}
	if err := c.provisionDefences(); err != nil {
		return fmt.Errorf("intake: form %s: %w", c.Form, err)
	}
	if err := c.provisionRoutes(); err != nil {
		return fmt.Errorf("intake: form %s: %w", c.Form, err)
	}
	if c.Autoreply != nil {
		if err := c.Autoreply.provision(); err != nil {
			return fmt.Errorf("intake: form %s: %w", c.Form, err)
		}
	}
	c.warnings = nil
	if err := c.checkReferences(); err != nil { // references.go
		return fmt.Errorf("intake: form %s: %w", c.Form, err)
	}
	c.checkCoverage() // coverage.go
	// A route that prints fields has its template_empty series from the start, at 0, so
	// that an alert on its increase() sees the first one (internal/telemetry/metrics.go).
	for i := range c.Routes {
		if len(c.Routes[i].printed) > 0 {
			c.counters.TemplateEmpty(c.Routes[i].Name)
		}
	}
	if c.Autoreply != nil && len(c.Autoreply.route.printed) > 0 {
		c.counters.TemplateEmpty(AutoreplyRoute)
	}
	if len(c.SpamKey) == 0 {
		c.SpamKey = make([]byte, 32)
		if _, err := rand.Read(c.SpamKey); err != nil {
			return fmt.Errorf("spam key: %w", err)
		}
	}
	if len(c.IPHashKey) == 0 {
		c.IPHashKey = make([]byte, 32)
		if _, err := rand.Read(c.IPHashKey); err != nil {
			return fmt.Errorf("intake: ip hash key: %w", err)
		}
	}
	key := c.IPHashKey
	c.ipMACs = &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}
	return nil
}

func (c *Config) provisionFields() error {
	seen := map[string]bool{}
	for i, f := range c.Fields {
		if strings.TrimSpace(f.Name) == "" {
			// The position is all a JSON config has to point at a nameless field.
			return fmt.Errorf("field %d: name is empty", i+1)
		}
		if err := f.Check(); err != nil {
			return err
		}
		switch {
		case f.Name == c.Honeypot:
			return fmt.Errorf("field %q: is the honeypot", f.Name)
		case seen[f.Name]:
			return fmt.Errorf("field %q: listed twice", f.Name)
		case f.MaxLength > c.MaxFieldLength:
			return fmt.Errorf("field %q: max_length %d is above max_field_length %d, the limit of any one value; raise max_field_length or lower max_length",
				f.Name, f.MaxLength, c.MaxFieldLength)
		}
		seen[f.Name] = true
	}
	return nil
}

// NameRoutes gives every unnamed route its name, as Provision does (the doctor names
// routes the same way without provisioning): the channel, with "-2", "-3"... for later
// unnamed routes of one channel.
func (c *Config) NameRoutes() error {
	names := map[string]bool{}
	for _, r := range c.Routes {
		if r.Name != "" {
			if names[r.Name] {
				return fmt.Errorf("notify: route name %q used twice", r.Name)
			}
			names[r.Name] = true
		}
	}
	if c.Autoreply != nil && names[AutoreplyRoute] {
		return fmt.Errorf("notify: route name %q is the autoreply's", AutoreplyRoute)
	}
	perChannel := map[outbox.Channel]int{}
	for i := range c.Routes {
		r := &c.Routes[i]
		if r.Name != "" {
			continue
		}
		// Later unnamed routes of a channel get "-2", "-3"... skipping names the user
		// took, so route names (part of the deliveries' unique key) stay unique.
		for {
			perChannel[r.Channel]++
			name := string(r.Channel)
			if n := perChannel[r.Channel]; n > 1 {
				name = fmt.Sprintf("%s-%d", r.Channel, n)
			}
			if !names[name] {
				r.Name = name
				names[name] = true
				break
			}
		}
	}
	return nil
}

// telegramChatID is what a Bot API chat_id may be: a (negative for groups) number, or a
// public channel's @username.
var telegramChatID = regexp.MustCompile(`^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{4,31})$`)

// absoluteHTTP reports an absolute http(s) URL with a host and no control characters.
func absoluteHTTP(s string) bool {
	return !hasControl(s) && CheckHTTPURL(s) == nil
}

func (c *Config) provisionRoutes() error {
	if err := c.NameRoutes(); err != nil {
		return err
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		if hasControl(r.Name) {
			return fmt.Errorf("notify: route name %q contains control characters", r.Name)
		}
		if r.MaxAttempts < 0 {
			return fmt.Errorf("notify %s: max_attempts must not be negative", r.Name)
		}
		if hasControl(r.Subject) {
			return fmt.Errorf("notify %s: subject contains control characters", r.Name)
		}
		if err := r.CheckGuards(); err != nil {
			return fmt.Errorf("notify %s: %w", r.Name, err)
		}
		if err := r.parseTemplates(); err != nil {
			return fmt.Errorf("notify %s: %w", r.Name, err)
		}
		r.printed = r.renderedReferences()
		if err := r.checkDigest(); err != nil {
			return fmt.Errorf("notify %s: %w", r.Name, err)
		}
		if r.Channel != outbox.ChannelTelegram && (r.ChatID != "" || r.Token != "" || r.Endpoint != "") {
			return fmt.Errorf("notify %s: chat_id, token and endpoint are for telegram routes", r.Name)
		}
		switch r.Channel {
		case outbox.ChannelEmail:
			if len(r.To) == 0 {
				return fmt.Errorf("notify %s: email needs at least one recipient", r.Name)
			}
			if r.URL != "" {
				return fmt.Errorf("notify %s: email routes take recipients, not a URL", r.Name)
			}
			seen := map[string]bool{}
			for _, to := range r.To {
				if !validEmail(to) {
					return fmt.Errorf("notify %s: %q is not a valid email address", r.Name, to)
				}
				if seen[strings.ToLower(to)] {
					return fmt.Errorf("notify %s: recipient %q listed twice", r.Name, to)
				}
				seen[strings.ToLower(to)] = true
			}
		case outbox.ChannelWebhook:
			if len(r.To) != 0 {
				return fmt.Errorf("notify %s: webhook routes take a URL, not recipients", r.Name)
			}
			if !absoluteHTTP(r.URL) {
				return fmt.Errorf("notify %s: webhook URL %q must be an absolute http(s) URL", r.Name, r.URL)
			}
		case outbox.ChannelSlack, outbox.ChannelDiscord, outbox.ChannelTeams:
			if len(r.To) != 0 || r.Secret != "" || len(r.Headers) != 0 {
				return fmt.Errorf("notify %s: %s routes take a webhook URL and no recipients, secret or headers", r.Name, r.Channel)
			}
			// The URL is a credential: the error names the route, not the URL.
			if !absoluteHTTP(r.URL) {
				return fmt.Errorf("notify %s: the %s webhook URL must be an absolute http(s) URL", r.Name, r.Channel)
			}
		case outbox.ChannelTelegram:
			if len(r.To) != 0 || r.URL != "" || r.Secret != "" || len(r.Headers) != 0 {
				return fmt.Errorf("notify %s: telegram routes take a chat id, a token and an endpoint only", r.Name)
			}
			if err := CheckTelegramChatID(r.ChatID); err != nil {
				return fmt.Errorf("notify %s: %w", r.Name, err)
			}
			if strings.TrimSpace(r.Token) == "" {
				return fmt.Errorf("notify %s: telegram needs the bot's token (token {env.TELEGRAM_TOKEN})", r.Name)
			}
			if r.Endpoint != "" && !absoluteHTTP(r.Endpoint) {
				return fmt.Errorf("notify %s: telegram endpoint %q must be an absolute http(s) URL", r.Name, r.Endpoint)
			}
		default:
			return fmt.Errorf("notify %s: unknown channel %q (want email, webhook, telegram, slack, discord or teams)", r.Name, r.Channel)
		}
	}
	return nil
}
