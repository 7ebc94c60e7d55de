// Package intake turns an HTTP form post into a Submission and its planned Deliveries,
// and writes the answer; Config.Serve (serve.go) is its one entry point. It bounds,
// parses, normalises and checks the request; it never touches the database (the
// caller's Accepter, outbox.Acceptor in the Caddy App, stores the result) and it imports
// nothing from Caddy.
//
// Choices a user can observe:
//   - Field order is kept as sent. A repeated name (a checkbox group) is stored once, at
//     its first position, with its non-empty values joined by ", ".
//   - Names starting with "_" never reach the stored data or notifications: _gotcha (or
//     the configured honeypot), _replyto, _subject, _next and _idempotency_key are read,
//     any other "_" name is dropped. The Idempotency-Key header wins over the field.
//   - JSON bodies are one flat object; numbers keep their text, booleans become
//     "true"/"false", null an empty value; nested objects and arrays are refused (400).
//   - Spam is answered exactly like success ("status":"accepted", or the same 303), so a
//     bot cannot learn what gave it away. Only an accepted or spam post binds its
//     idempotency key: a retry with the key and the same content answers with the
//     original submission's id, and JSON answers carry "duplicate":true so a retrying
//     client knows its first post got through. A refused post (422, 429, quarantine)
//     leaves the key free, so the corrected or delayed retry is stored afresh; the key
//     with other content after a bound post is stored quarantined/idempotency_key_reused
//     and answered 422.
//   - `_next` is followed only when it is a path on the same site ("/thanks") or a URL on
//     the same host or an allowed origin, so the form cannot serve as an open redirect.
//   - The intake defences (allowed origins, rate limit, captcha, dedupe) are described
//     in defences.go and the README's "Defences" section.
package intake

import (
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/digest"
)

// Defaults.
const (
	DefaultMaxBodyBytes  = 256 << 10
	DefaultHoneypot      = "_gotcha"
	DefaultMaxFields     = 100
	DefaultMaxFieldLen   = 10000
	DefaultMaxUnknown    = 20
	DefaultMaxUnknownLen = 2000

	// DefaultAttachMax is a route's total of attached bytes when `attach` names none:
	// below SES's and Resend's message limits (40 MB) once base64 has grown it by a third.
	DefaultAttachMax = 10 << 20

	// MaxIdempotencyKeyLength bounds the key a client may send (header or field).
	MaxIdempotencyKeyLength = 200
	// MaxFieldNameLength bounds a field's name; names reach text bodies and templates.
	MaxFieldNameLength = 200
	// ModeEnforce stores submissions that break the field spec as quarantined and answers
	// 422; ModeMonitor accepts them and records a schema.drift event naming the fields.
	ModeEnforce = "enforce"
	ModeMonitor = "monitor"

	// Client IP storage modes (Config.ClientIPMode).
	ClientIPHash = "hash"
	ClientIPFull = "full"
	ClientIPOff  = "off"
)

// Config is one form's intake configuration: the `form_outbox` directive's options. The
// JSON tags are the handler's JSON twin of the Caddyfile.
type Config struct {
	// Form names the form; submissions are stored under it. Default: the directive's path.
	Form string `json:"form,omitempty"`
	// Fields is the field spec, checked in enforce mode.
	Fields []FieldSpec `json:"fields,omitempty"`
	// Honeypot is the name of the hidden field bots fill in. Default "_gotcha".
	Honeypot string `json:"honeypot,omitempty"`
	// Redirect is where HTML posts are sent with 303 after success. Empty: a built-in
	// thank-you page.
	Redirect string `json:"redirect,omitempty"`
	// MaxBodyBytes bounds the request body; 413 past it. Default 256 KiB.
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
	// MaxFields caps the number of fields; MaxFieldLength caps any single value.
	MaxFields      int `json:"max_fields,omitempty"`
	MaxFieldLength int `json:"max_field_length,omitempty"`
	// Routes are the notifications planned for every submission.
	Routes []Route `json:"notify,omitempty"`
	// StoreOnly says that a form with no routes is meant to have none: its posts are
	// kept for the inbox and notify nobody (CheckRouted, coverage.go).
	StoreOnly bool `json:"store_only,omitempty"`
	// Autoreply, when set, answers the visitor by e-mail (see Autoreply); nil: never.
	Autoreply *Autoreply `json:"autoreply,omitempty"`
	// Canary, when set, sends the form's canary (canary.go); nil: the App's default.
	Canary *Canary `json:"canary,omitempty"`
	// Mode is how the field spec is applied: "enforce" (default) or "monitor"
	// (Caddyfile `schema enforce|monitor`, or its alias `mode`).
	Mode string `json:"mode,omitempty"`
	// MaxUnknownFields and MaxUnknownLength cap the fields a post sends beyond the field
	// spec (only when there is one): the first MaxUnknownFields are kept, each cut to
	// MaxUnknownLength characters; the rest are dropped. Defaults 20 and 2000.
	MaxUnknownFields int `json:"max_unknown_fields,omitempty"`
	MaxUnknownLength int `json:"max_unknown_length,omitempty"`

	// AllowedOrigins are the sites allowed to post ("https://example.com"), checked on
	// the Origin header, else the Referer. Empty: every origin is allowed and no CORS
	// grant is made.
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
	// RateLimit limits posts per client; nil: no limit.
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// Captcha verifies a Turnstile, hCaptcha or reCAPTCHA token; nil: none.
	Captcha *Captcha `json:"captcha,omitempty"`
	// Spam holds the spam thresholds and signals (spam.go); nil: the defaults.
	Spam *Spam `json:"spam,omitempty"`
	// Altcha asks every post for an ALTCHA-compatible proof of work (altcha.go); nil: none.
	Altcha *Altcha `json:"altcha,omitempty"`
	// ClientIPMode is how the client address is stored: "hash" (default, a keyed
	// HMAC), "full" (the address itself) or "off" (nothing).
	ClientIPMode string `json:"client_ip,omitempty"`
	// DedupeWindow is how long an identical post from the same client is answered with
	// the first one's id instead of being stored again. Default 10s. DedupeOff turns
	// this off (every post is stored).
	DedupeWindow Duration `json:"dedupe_window,omitempty"`
	DedupeOff    bool     `json:"dedupe_off,omitempty"`

	// The fields below are set by the Caddy layer, never by the user's JSON.

	// IPHashKey keys the HMAC that turns the client IP into Meta.ClientIP, so stored
	// submissions can be correlated per client without keeping addresses. Provision makes
	// a random per-process key when it is empty (hashes then differ across restarts).
	// Set it before Provision: the hashes use the key Provision saw.
	IPHashKey []byte `json:"-"`
	// InboxURL is the operator's inbox (the App's inbox_url): emails link to the
	// submission's page under it. Empty: no link.
	InboxURL string `json:"-"`
	// FileURL, when set (the App's files_url), returns the signed, expiring download link
	// of a file for webhooks and chat messages (internal/filelink). Nil: no link.
	FileURL func(id uuid.UUID, now time.Time) string `json:"-"`
	// ClientIP, when set, returns the client address (e.g. Caddy's trusted-proxy aware
	// client IP). Nil, or an empty answer: the host of r.RemoteAddr.
	ClientIP func(*http.Request) string `json:"-"`
	// EmailAttempts and WebhookAttempts are the App's retry budgets for routes without
	// their own MaxAttempts. Zero: outbox.DefaultAttempts of the route's channel.
	EmailAttempts   int `json:"-"`
	WebhookAttempts int `json:"-"`
	// Ledger, when set, counts every new post answered success (outbox.LedgerCounter,
	// the lead ledger). Nil: nothing counted.
	Ledger AnswerCounter `json:"-"`

	// SpamKey signs the time trap's tokens (timetrap.go). Provision makes a random
	// per-process key when it is empty (tokens then fail on another instance or after a
	// restart). The Caddy layer keeps it in a file beside the IP hash key.
	SpamKey []byte `json:"-"`
	// Tokens records used spam tokens in the shared store, so a token is single use
	// across instances; nil: reuse is not checked.
	Tokens outbox.TokenLedger `json:"-"`

	ipMACs   *sync.Pool   // HMACs keyed with IPHashKey at Provision, for hashIP
	limiter  *limiter     // nil without RateLimit
	recent   *recentPosts // nil when dedupe is off
	counters *Counters
	warnings []string // found by Provision, logged by the Caddy layer (Warnings)
}

// FieldSpec describes one expected field. Every check but Required applies only to a
// non-empty value.
type FieldSpec struct {
	Name      string `json:"name"`
	Required  bool   `json:"required,omitempty"`
	MinLength int    `json:"min_length,omitempty"`
	MaxLength int    `json:"max_length,omitempty"`
	Email     bool   `json:"email,omitempty"`
	// URL wants an absolute http(s) URL with a host (so never javascript: or data:).
	URL bool `json:"url,omitempty"`
	// Number wants a finite decimal number such as 42, -1.5 or 2e3.
	Number bool `json:"number,omitempty"`
	// OneOf lists the only values allowed (a select or radio group), compared exactly.
	OneOf []string `json:"one_of,omitempty"`
	// Pattern is a Go (RE2) regular expression the whole value must match.
	Pattern string `json:"pattern,omitempty"`

	// File makes the field a file upload (multipart posts; upload.go). Only Required and
	// the three options below apply to it. A file that breaks them makes the submission
	// quarantined/file_rejected, in either mode.
	File bool `json:"file,omitempty"`
	// MaxFileSize bounds each file, in bytes; 0: only the body bound (max_body).
	MaxFileSize int64 `json:"max_file_size,omitempty"`
	// MaxFiles is how many files the field takes; 0: DefaultMaxFiles (1).
	MaxFiles int `json:"max_files,omitempty"`
	// Types lists the allowed types, judged on the content (sniffed), never on what the
	// client declared: exact types (application/pdf) or wildcards (image/*). Empty: any
	// type but HTML, SVG, XML, scripts and executables, which only an exact entry allows.
	Types []string `json:"types,omitempty"`

	pattern *regexp.Regexp
}

// Route is one `notify` line: a channel and its recipients (email addresses, one URL or
// one Telegram chat id), the guards that decide whether a submission takes it, and how
// its message is written.
type Route struct {
	// Name identifies the route within the form; unique per form. Default: the channel
	// name, with "-2", "-3"... for later routes of the same channel.
	Name    string         `json:"name,omitempty"`
	Channel outbox.Channel `json:"channel"`
	// To lists email recipients (channel email).
	To []string `json:"to,omitempty"`
	// URL is the webhook target (channels webhook, slack, discord and teams). For the chat
	// channels the URL is the credential: it is stored as the delivery's recipient, as
	// the webhook's is, and never logged.
	URL string `json:"url,omitempty"`
	// ChatID is the Telegram chat (channel telegram): a number such as -100123 or a
	// public @channelname.
	ChatID string `json:"chat_id,omitempty"`
	// Token is the Telegram bot token (channel telegram); a secret that lives in the
	// config only, never in payloads, errors or logs. Placeholders such as
	// {env.TELEGRAM_TOKEN} are resolved at provision.
	Token string `json:"token,omitempty"`
	// Endpoint overrides the Telegram Bot API's base URL (channel telegram): a local Bot
	// API server or a test fake.
	Endpoint string `json:"endpoint,omitempty"`
	// When lists the guards that must all hold for a submission to take this route;
	// empty: every submission does.
	When []Guard `json:"when,omitempty"`
	// Fallback routes take only the submissions no other route matched; they have no
	// guards of their own.
	Fallback bool `json:"fallback,omitempty"`
	// Subject is the email subject template; {field.NAME} is replaced by that field.
	Subject string `json:"subject,omitempty"`
	// BodyText and BodyHTML are files holding the operator's email bodies: a Go
	// text/template and an html/template over TemplateData, parsed at provision and
	// rendered at intake. Empty: the built-in body.
	BodyText string `json:"body_text,omitempty"`
	BodyHTML string `json:"body_html,omitempty"`
	// Text is a file holding a chat route's message (channels telegram, slack, discord
	// and teams): a Go text/template over ChatTemplateData written in the target's
	// markup, in which every printed value is escaped for the target. Empty: the
	// built-in message.
	Text string `json:"text,omitempty"`
	// Content is what the email holds: ContentFull (default: every field) or ContentLink
	// (the form, the id and the inbox link only, for operators who keep visitor data
	// out of mailboxes; needs InboxURL).
	Content string `json:"content,omitempty"`
	// Attach sends the submission's files with the email (channel email), up to
	// AttachMax bytes in all (default DefaultAttachMax); above it the email lists them
	// and says they were too large to attach. A rejected file is never attached.
	Attach    bool  `json:"attach,omitempty"`
	AttachMax int64 `json:"attach_max,omitempty"`
	// Secret signs webhooks (whsec_...); never stored in payloads or logged.
	Secret string `json:"secret,omitempty"`
	// Headers are extra HTTP headers sent with every webhook of this route (channel
	// webhook), e.g. an Authorization the receiver expects. Values may hold secrets: they
	// live in the config, never in payloads or logs.
	Headers map[string]string `json:"headers,omitempty"`
	// Rate paces this route's sends to its target (channels webhook, telegram, slack,
	// discord and teams): "N/s", "N/m" or "off"; empty means the channel's default
	// (docs/caddyfile.md, "Send rates"). Two routes to one target must agree.
	Rate string `json:"rate,omitempty"`
	// MaxAttempts overrides the retry budget for this route's deliveries; 0 = App default.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Digest makes an email route a digest (docs/design.md, "Digests"): no delivery per
	// submission, one e-mail per closed period listing the form's accepted submissions.
	// The schedule: hourly, daily at HH:MM [TZ], weekly WEEKDAY HH:MM [TZ] or every
	// DURATION (outbox/digest.Parse).
	Digest string `json:"digest,omitempty"`

	templates routeTemplates  // parsed BodyText, BodyHTML and Text
	printed   []Reference     // the fields its message prints (renderedReferences), for templateempty.go
	schedule  digest.Schedule // parsed Digest
}

// Email contents of a route (Route.Content).
const (
	ContentFull = "full"
	ContentLink = "link"
)
