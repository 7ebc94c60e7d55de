package intake

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/google/uuid"
)

func TestParseOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		req        func(t *testing.T) *http.Request
		status     outbox.SubmissionStatus
		reason     string
		data       outbox.Fields
		violations []Violation
		wantsJSON  bool
		delivery   outbox.DeliveryStatus
	}{
		{
			name:     "urlencoded accepted",
			req:      func(t *testing.T) *http.Request { return postForm(form(validContact...)) },
			status:   outbox.SubmissionAccepted,
			data:     fields(validContact...),
			delivery: outbox.DeliveryPending,
		},
		{
			name:     "multipart accepted",
			req:      func(t *testing.T) *http.Request { return postMultipart(t, validContact...) },
			status:   outbox.SubmissionAccepted,
			data:     fields(validContact...),
			delivery: outbox.DeliveryPending,
		},
		{
			name: "JSON accepted, numbers and booleans stringified, null empty",
			req: func(t *testing.T) *http.Request {
				return postJSON(`{"name":"Ada Lovelace","email":"ada@example.com","message":"Hello there","age":36,"ratio":1.5e3,"subscribe":true,"phone":null}`)
			},
			status:    outbox.SubmissionAccepted,
			data:      fields(append(append([]string{}, validContact...), "age", "36", "ratio", "1.5e3", "subscribe", "true", "phone", "")...),
			wantsJSON: true,
			delivery:  outbox.DeliveryPending,
		},
		{
			name: "field order kept, not sorted",
			req: func(t *testing.T) *http.Request {
				return postForm(form("zeta", "1", "message", "Hi", "alpha", "2", "email", "a@example.com", "name", "N"))
			},
			status:   outbox.SubmissionAccepted,
			data:     fields("zeta", "1", "message", "Hi", "alpha", "2", "email", "a@example.com", "name", "N"),
			delivery: outbox.DeliveryPending,
		},
		{
			name: "values trimmed, CRLF and CR become LF, names trimmed",
			req: func(t *testing.T) *http.Request {
				return postForm(form(" name ", "  Ada \t", "email", "ada@example.com", "message", "\r\nline 1\r\nline 2\rline 3\n  "))
			},
			status:   outbox.SubmissionAccepted,
			data:     fields("name", "Ada", "email", "ada@example.com", "message", "line 1\nline 2\nline 3"),
			delivery: outbox.DeliveryPending,
		},
		{
			name: "repeated names are joined in the first position, empty values dropped",
			req: func(t *testing.T) *http.Request {
				return postForm(form("interest", "", "name", "Ada", "interest", "books", "email", "ada@example.com", "interest", "maps", "message", "Hi"))
			},
			status:   outbox.SubmissionAccepted,
			data:     fields("interest", "books, maps", "name", "Ada", "email", "ada@example.com", "message", "Hi"),
			delivery: outbox.DeliveryPending,
		},
		{
			name: "special and underscore fields stay out of the data",
			req: func(t *testing.T) *http.Request {
				return postForm(form(append([]string{"_subject", "Hi", "_next", "/done", "_replyto", "r@example.com", "_language", "fr", "_gotcha", ""}, validContact...)...))
			},
			status:   outbox.SubmissionAccepted,
			data:     fields(validContact...),
			delivery: outbox.DeliveryPending,
		},
		{
			name: "Accept: application/json on a form post wants JSON",
			req: func(t *testing.T) *http.Request {
				r := postForm(form(validContact...))
				r.Header.Set("Accept", "text/html, application/json;q=0.9")
				return r
			},
			status:    outbox.SubmissionAccepted,
			data:      fields(validContact...),
			wantsJSON: true,
			delivery:  outbox.DeliveryPending,
		},
		{
			name: "honeypot filled is spam and skips every delivery",
			req: func(t *testing.T) *http.Request {
				return postForm(form(append([]string{"_gotcha", "http://spam.example"}, validContact...)...))
			},
			status:   outbox.SubmissionSpam,
			reason:   outbox.ReasonHoneypot,
			data:     fields(validContact...),
			delivery: outbox.DeliverySkipped,
		},
		{
			name:     "honeypot wins over schema violations and reports none",
			req:      func(t *testing.T) *http.Request { return postForm(form("_gotcha", "x", "name", "bot")) },
			status:   outbox.SubmissionSpam,
			reason:   outbox.ReasonHoneypot,
			data:     fields("name", "bot"),
			delivery: outbox.DeliverySkipped,
		},
		{
			name: "schema violations quarantine with per-field messages in spec order",
			req: func(t *testing.T) *http.Request {
				return postForm(form("message", strings.Repeat("x", 5001), "email", "not an address", "name", ""))
			},
			status: outbox.SubmissionQuarantined,
			reason: outbox.ReasonSchemaViolation,
			data:   fields("message", strings.Repeat("x", 5001), "email", "not an address", "name", ""),
			violations: []Violation{
				{Field: "name", Message: "name is required"},
				{Field: "email", Message: "email must be a valid email address"},
				{Field: "message", Message: "message must be at most 5000 characters"},
			},
			delivery: outbox.DeliverySkipped,
		},
		{
			name:   "missing required field and display-name address",
			req:    func(t *testing.T) *http.Request { return postJSON(`{"name":"Ada","email":"Ada <ada@example.com>"}`) },
			status: outbox.SubmissionQuarantined,
			reason: outbox.ReasonSchemaViolation,
			data:   fields("name", "Ada", "email", "Ada <ada@example.com>"),
			violations: []Violation{
				{Field: "email", Message: "email must be a valid email address"},
				{Field: "message", Message: "message is required"},
			},
			wantsJSON: true,
			delivery:  outbox.DeliverySkipped,
		},
		{
			name: "max_length counts characters, not bytes",
			req: func(t *testing.T) *http.Request {
				return postForm(form("name", strings.Repeat("é", 120), "email", "a@example.com", "message", "m"))
			},
			status:   outbox.SubmissionAccepted,
			data:     fields("name", strings.Repeat("é", 120), "email", "a@example.com", "message", "m"),
			delivery: outbox.DeliveryPending,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := contactConfig(t)
			res := mustParse(t, c, tt.req(t))
			sub := res.Submission
			if sub.Status != tt.status || sub.Reason != tt.reason {
				t.Errorf("status/reason = %s/%q, want %s/%q", sub.Status, sub.Reason, tt.status, tt.reason)
			}
			if !reflect.DeepEqual(sub.Data, tt.data) {
				t.Errorf("data =\n%q\nwant\n%q", sub.Data, tt.data)
			}
			if !reflect.DeepEqual(res.Violations, tt.violations) {
				t.Errorf("violations = %+v, want %+v", res.Violations, tt.violations)
			}
			if res.WantsJSON != tt.wantsJSON {
				t.Errorf("WantsJSON = %v, want %v", res.WantsJSON, tt.wantsJSON)
			}
			if sub.Form != "contact" || !sub.CreatedAt.Equal(testNow) {
				t.Errorf("form/created = %q/%v", sub.Form, sub.CreatedAt)
			}
			if sub.ID.Version() != 7 {
				t.Errorf("submission id %s is not a UUIDv7", sub.ID)
			}
			if len(res.Deliveries) != 3 {
				t.Fatalf("got %d deliveries, want 3 (2 email recipients + 1 webhook)", len(res.Deliveries))
			}
			for _, d := range res.Deliveries {
				if d.Status != tt.delivery || d.SubmissionID != sub.ID {
					t.Errorf("delivery %s: status %s submission %s, want %s %s", d.Recipient, d.Status, d.SubmissionID, tt.delivery, sub.ID)
				}
			}
		})
	}
}

func TestParseRejectsRequests(t *testing.T) {
	small := func(c *Config) { c.MaxBodyBytes = 64 }
	tests := []struct {
		name    string
		adjust  func(*Config)
		req     func(t *testing.T) *http.Request
		status  int
		message string
	}{
		{
			name:    "body over the limit",
			adjust:  small,
			req:     func(t *testing.T) *http.Request { return postForm(form("message", strings.Repeat("x", 100))) },
			status:  413,
			message: "request body too large (at most 64 bytes)",
		},
		{
			name:   "body over the limit without a Content-Length",
			adjust: small,
			req: func(t *testing.T) *http.Request {
				r := postJSON(`{"message":"` + strings.Repeat("x", 100) + `"}`)
				r.ContentLength = -1
				return r
			},
			status:  413,
			message: "request body too large (at most 64 bytes)",
		},
		{
			name:   "multipart over the limit without a Content-Length",
			adjust: small,
			req: func(t *testing.T) *http.Request {
				r := postMultipart(t, "message", strings.Repeat("x", 100))
				r.ContentLength = -1
				return r
			},
			status:  413,
			message: "request body too large (at most 64 bytes)",
		},
		{
			name: "text/plain",
			req: func(t *testing.T) *http.Request {
				r := postForm("hello")
				r.Header.Set("Content-Type", "text/plain")
				return r
			},
			status:  415,
			message: "unsupported content type: send application/x-www-form-urlencoded, multipart/form-data or application/json",
		},
		{
			name: "no content type",
			req: func(t *testing.T) *http.Request {
				r := postForm(form(validContact...))
				r.Header.Del("Content-Type")
				return r
			},
			status:  415,
			message: "unsupported content type: send application/x-www-form-urlencoded, multipart/form-data or application/json",
		},
		{
			name:    "GET",
			req:     func(t *testing.T) *http.Request { r := postForm(""); r.Method = http.MethodGet; return r },
			status:  405,
			message: "forms are submitted with POST",
		},
		{
			name:    "invalid UTF-8 in an urlencoded value",
			req:     func(t *testing.T) *http.Request { return postForm("name=%FF%FE") },
			status:  400,
			message: "fields must be valid UTF-8",
		},
		{
			name:    "invalid UTF-8 in a JSON body",
			req:     func(t *testing.T) *http.Request { return postJSON("{\"name\":\"\xff\"}") },
			status:  400,
			message: "body is not valid UTF-8",
		},
		{
			name:    "invalid UTF-8 in a multipart value",
			req:     func(t *testing.T) *http.Request { return postMultipart(t, "name", "\xc3\x28") },
			status:  400,
			message: "fields must be valid UTF-8",
		},
		{
			name:    "NUL in a value",
			req:     func(t *testing.T) *http.Request { return postForm("name=a%00b") },
			status:  400,
			message: "fields must not contain NUL characters",
		},
		{
			name:    "NUL escaped in JSON",
			req:     func(t *testing.T) *http.Request { return postJSON(`{"name":"a\u0000b"}`) },
			status:  400,
			message: "fields must not contain NUL characters",
		},
		{
			name:    "nested JSON object",
			req:     func(t *testing.T) *http.Request { return postJSON(`{"name":"Ada","address":{"city":"London"}}`) },
			status:  400,
			message: `field "address": nested objects and arrays are not accepted`,
		},
		{
			name:    "JSON array value",
			req:     func(t *testing.T) *http.Request { return postJSON(`{"tags":["a","b"]}`) },
			status:  400,
			message: `field "tags": nested objects and arrays are not accepted`,
		},
		{
			name:    "JSON top-level array",
			req:     func(t *testing.T) *http.Request { return postJSON(`[{"name":"Ada"}]`) },
			status:  400,
			message: "JSON body must be an object of fields",
		},
		{
			name:    "JSON trailing data",
			req:     func(t *testing.T) *http.Request { return postJSON(`{"name":"Ada"} {"name":"Bob"}`) },
			status:  400,
			message: "malformed JSON body: data after the object",
		},
		{
			name:    "JSON truncated",
			req:     func(t *testing.T) *http.Request { return postJSON(`{"name":"Ada"`) },
			status:  400,
			message: "malformed JSON body: unexpected end",
		},
		{
			name: "multipart without boundary",
			req: func(t *testing.T) *http.Request {
				r := postForm("x")
				r.Header.Set("Content-Type", "multipart/form-data")
				return r
			},
			status:  400,
			message: "malformed body: multipart without a boundary",
		},
		{
			name:    "too many fields",
			adjust:  func(c *Config) { c.MaxFields = 3 },
			req:     func(t *testing.T) *http.Request { return postForm("a=1&b=2&c=3&d=4") },
			status:  400,
			message: "too many fields (at most 3)",
		},
		{
			name:    "too many JSON fields",
			adjust:  func(c *Config) { c.MaxFields = 3 },
			req:     func(t *testing.T) *http.Request { return postJSON(`{"a":1,"b":2,"c":3,"d":4}`) },
			status:  400,
			message: "too many fields (at most 3)",
		},
		{
			name:    "too many multipart fields",
			adjust:  func(c *Config) { c.MaxFields = 3 },
			req:     func(t *testing.T) *http.Request { return postMultipart(t, "a", "1", "b", "2", "c", "3", "d", "4") },
			status:  400,
			message: "too many fields (at most 3)",
		},
		{
			name:    "special field over MaxFieldLength",
			adjust:  func(c *Config) { c.Fields, c.MaxFieldLength = nil, 10 },
			req:     func(t *testing.T) *http.Request { return postForm(form("_subject", strings.Repeat("y", 11))) },
			status:  400,
			message: `field "_subject" is too long (at most 10 characters)`,
		},
		{
			name:    "bad percent escape",
			req:     func(t *testing.T) *http.Request { return postForm("name=%zz") },
			status:  400,
			message: `malformed body: bad escape in the value of "name"`,
		},
		{
			name:    "field without a name",
			req:     func(t *testing.T) *http.Request { return postForm("=value") },
			status:  400,
			message: "a field has no name",
		},
		{
			name:    "control character in a field name",
			req:     func(t *testing.T) *http.Request { return postForm("na%0Ame=x") },
			status:  400,
			message: "field names must not contain control characters",
		},
		{
			name:    "idempotency key too long",
			req:     func(t *testing.T) *http.Request { return postForm(form("_idempotency_key", strings.Repeat("k", 201))) },
			status:  400,
			message: "idempotency key too long (at most 200 characters)",
		},
		{
			name:    "idempotency key with a control character",
			req:     func(t *testing.T) *http.Request { return postForm(form("_idempotency_key", "a\x1bb")) },
			status:  400,
			message: "idempotency key must not contain control characters",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := contactConfig(t)
			if tt.adjust != nil {
				tt.adjust(c)
			}
			res, err := c.Parse(tt.req(t), testNow)
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("Parse = %v, %v; want a *RequestError", res, err)
			}
			if re.Status != tt.status || re.Message != tt.message {
				t.Errorf("got %d %q, want %d %q", re.Status, re.Message, tt.status, tt.message)
			}
		})
	}
}

// A FieldSpec max_length is the visitor's mistake to fix (422), while MaxFieldLength
// protects the service (400): the same length must land on the right side.
func TestSpecMaxLengthIsAViolationNotARequestError(t *testing.T) {
	c := contactConfig(t)
	res := mustParse(t, c, postForm(form("name", strings.Repeat("n", 121), "email", "a@example.com", "message", "m")))
	want := []Violation{{Field: "name", Message: "name must be at most 120 characters"}}
	if res.Submission.Status != outbox.SubmissionQuarantined || !reflect.DeepEqual(res.Violations, want) {
		t.Errorf("status %s violations %+v, want quarantined %+v", res.Submission.Status, res.Violations, want)
	}
}

func TestMonitorModeAcceptsAndReports(t *testing.T) {
	c := contactConfig(t)
	c.Mode = ModeMonitor
	res := mustParse(t, c, postForm(form("name", "Ada")))
	if res.Submission.Status != outbox.SubmissionAccepted || len(res.Violations) != 2 {
		t.Errorf("status %s violations %+v, want accepted with 2 violations", res.Submission.Status, res.Violations)
	}
	for _, d := range res.Deliveries {
		if d.Status != outbox.DeliveryPending {
			t.Errorf("delivery %s is %s, want pending", d.Recipient, d.Status)
		}
	}
}

func TestIdempotencyKey(t *testing.T) {
	tests := []struct {
		name   string
		header string
		field  string
		want   string
	}{
		{name: "none", want: ""},
		{name: "from the field", field: "field-key-1", want: "field-key-1"},
		{name: "from the header", header: "hdr-key-1", want: "hdr-key-1"},
		{name: "header wins over the field", header: "hdr-key-2", field: "field-key-2", want: "hdr-key-2"},
		{name: "trimmed", field: "  spaced  ", want: "spaced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := contactConfig(t)
			pairs := append([]string{}, validContact...)
			if tt.field != "" {
				pairs = append(pairs, "_idempotency_key", tt.field)
			}
			r := postForm(form(pairs...))
			if tt.header != "" {
				r.Header.Set("Idempotency-Key", tt.header)
			}
			res := mustParse(t, c, r)
			if got := res.Submission.IdempotencyKey; got != tt.want {
				t.Errorf("key = %q, want %q", got, tt.want)
			}
			if _, ok := res.Submission.Data.Get("_idempotency_key"); ok {
				t.Error("the key leaked into the data")
			}
		})
	}
}

func TestMeta(t *testing.T) {
	c := contactConfig(t)
	r := postForm(form(validContact...))
	r.RemoteAddr = "203.0.113.7:51234"
	r.Header.Set("User-Agent", strings.Repeat("u", 600)+"\r\n")
	res := mustParse(t, c, r)
	m := res.Submission.Meta
	if m.Origin != "https://example.com" || m.Referer != "https://example.com/contact.html" {
		t.Errorf("origin/referer = %q/%q", m.Origin, m.Referer)
	}
	if m.UserAgent != strings.Repeat("u", 512) {
		t.Errorf("user agent not truncated to 512 without control characters: %d %q", len(m.UserAgent), m.UserAgent[500:])
	}
	if len(m.ClientIP) != 32 || strings.Contains(m.ClientIP, "203.0.113.7") {
		t.Errorf("client ip = %q, want a 32-hex keyed hash", m.ClientIP)
	}

	// Same IP, same key: same hash (so floods can be grouped); another key or IP differs.
	again := mustParse(t, c, func() *http.Request { r := postForm(form(validContact...)); r.RemoteAddr = "203.0.113.7:9"; return r }())
	if again.Submission.Meta.ClientIP != m.ClientIP {
		t.Error("the same client IP hashed differently")
	}
	other := &Config{Form: "contact", IPHashKey: []byte("another-key")}
	if err := other.Provision(); err != nil {
		t.Fatal(err)
	}
	if h := other.hashIP("203.0.113.7"); h == m.ClientIP {
		t.Error("a different key gave the same hash")
	}

	// The Caddy layer's trusted client IP replaces RemoteAddr.
	c.ClientIP = func(*http.Request) string { return "198.51.100.1" }
	viaHook := mustParse(t, c, r)
	if viaHook.Submission.Meta.ClientIP != c.hashIP("198.51.100.1") {
		t.Error("ClientIP hook not used")
	}
	c.ClientIP = func(*http.Request) string { return "" }
	if got := mustParse(t, c, r).Submission.Meta.ClientIP; got != m.ClientIP {
		t.Errorf("an empty hook answer should fall back to RemoteAddr: %q, want %q", got, m.ClientIP)
	}
}

func TestContentHash(t *testing.T) {
	c := contactConfig(t)
	a := mustParse(t, c, postForm(form("name", "Ada", "email", "a@example.com"))).Submission
	b := mustParse(t, c, postForm(form("email", "a@example.com", "name", " Ada "))).Submission
	d := mustParse(t, c, postForm(form("name", "Ada", "email", "b@example.com"))).Submission
	if len(a.ContentHash) != 64 {
		t.Fatalf("content hash %q is not sha256 hex", a.ContentHash)
	}
	if a.ContentHash != b.ContentHash {
		t.Error("the same content in another order hashed differently")
	}
	if a.ContentHash == d.ContentHash {
		t.Error("different content hashed the same")
	}
	if a.ID == b.ID || a.ID == uuid.Nil {
		t.Error("submission ids must be fresh per request")
	}
}

func TestNextIsOnlyASameOriginPath(t *testing.T) {
	tests := map[string]string{
		"/thanks?x=1":          "/thanks?x=1",
		"//evil.example/":      "",
		"/\\evil.example":      "",
		"https://evil.example": "",
		"javascript:alert(1)":  "",
		"thanks.html":          "",
		"/a b":                 "",
	}
	for next, want := range tests {
		c := contactConfig(t)
		res := mustParse(t, c, postForm(form(append([]string{"_next", next}, validContact...)...)))
		if res.Next != want {
			t.Errorf("_next %q: Next = %q, want %q", next, res.Next, want)
		}
	}
}

func TestDeliveriesOnePerRoutePerRecipient(t *testing.T) {
	c := &Config{
		Form: "quote",
		Routes: []Route{
			{Channel: outbox.ChannelEmail, To: []string{"a@example.com", "b@example.com"}},
			{Channel: outbox.ChannelEmail, To: []string{"c@example.com"}, MaxAttempts: 3},
			{Channel: outbox.ChannelWebhook, URL: "https://hooks.example.com/1"},
			{Name: "crm", Channel: outbox.ChannelWebhook, URL: "https://hooks.example.com/2", MaxAttempts: 4},
		},
	}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, c, postForm(form("name", "Ada")))
	type row struct {
		route, recipient string
		channel          outbox.Channel
		max              int
	}
	var got []row
	for _, d := range res.Deliveries {
		got = append(got, row{d.Route, d.Recipient, d.Channel, d.MaxAttempts})
		if !d.NextAttemptAt.Equal(testNow) || d.Status != outbox.DeliveryPending || d.ID.Version() != 7 || d.Attempts != 0 {
			t.Errorf("delivery %s: next %v status %s id %s attempts %d", d.Recipient, d.NextAttemptAt, d.Status, d.ID, d.Attempts)
		}
	}
	want := []row{
		{"email", "a@example.com", outbox.ChannelEmail, 8},
		{"email", "b@example.com", outbox.ChannelEmail, 8},
		{"email-2", "c@example.com", outbox.ChannelEmail, 3},
		{"webhook", "https://hooks.example.com/1", outbox.ChannelWebhook, 10},
		{"crm", "https://hooks.example.com/2", outbox.ChannelWebhook, 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deliveries =\n%+v\nwant\n%+v", got, want)
	}
	// Both webhook routes send the same body, each to its own URL.
	if len(res.Deliveries) == len(want) {
		h1, h2 := payloadOf(t, res.Deliveries[3]), payloadOf(t, res.Deliveries[4])
		if h1.URL != "https://hooks.example.com/1" || h2.URL != "https://hooks.example.com/2" ||
			!strings.Contains(string(h1.Body), res.Submission.ID.String()) || string(h1.Body) != string(h2.Body) {
			t.Errorf("webhook payloads %s %s / %s %s", h1.URL, h1.Body, h2.URL, h2.Body)
		}
	}

	// The App's retry budgets replace the built-in defaults, not a route's own.
	c.EmailAttempts, c.WebhookAttempts = 5, 6
	res = mustParse(t, c, postForm(form("name", "Ada")))
	var maxes []int
	for _, d := range res.Deliveries {
		maxes = append(maxes, d.MaxAttempts)
	}
	if !reflect.DeepEqual(maxes, []int{5, 5, 3, 6, 4}) {
		t.Errorf("max attempts with App budgets = %v, want [5 5 3 6 4]", maxes)
	}
}

func TestNoRoutesNoDeliveries(t *testing.T) {
	c := &Config{Form: "bare"}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, c, postForm(form("a", "b")))
	if len(res.Deliveries) != 0 || res.Submission.Status != outbox.SubmissionAccepted {
		t.Errorf("deliveries %d status %s", len(res.Deliveries), res.Submission.Status)
	}
}
