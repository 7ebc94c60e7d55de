package intake

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// defendedConfig is the contact form with every defence but the captcha: allowed
// origins, a small rate limit with a storage quota of one row per window, more field
// checks, and the default dedupe window.
func defendedConfig(t testing.TB) *Config {
	t.Helper()
	c := contactConfig(t)
	c.Fields = append(c.Fields,
		FieldSpec{Name: "website", URL: true},
		FieldSpec{Name: "age", Number: true},
		FieldSpec{Name: "plan", OneOf: []string{"basic", "pro"}},
		FieldSpec{Name: "zip", Pattern: `[0-9]{5}`},
		FieldSpec{Name: "nick", MinLength: 3},
	)
	c.AllowedOrigins = []string{"https://example.com"}
	c.RateLimit = &RateLimit{Requests: 3, Window: Duration(60e9), MaxStored: 1}
	c.Form = "hostile"
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	return c
}

// slowBody yields a little, then fails the way a read deadline does (Caddy's
// read_timeout closing a slowloris body).
type slowBody struct{ sent bool }

func (b *slowBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, "name=Ada&email="), nil
	}
	return 0, os.ErrDeadlineExceeded
}

// TestHostileRequests is the table of bad and hostile requests: each through intake and
// a real SQLite store, asserting the exact answer, what was stored (or that nothing
// was, and why), and that no other row changed.
func TestHostileRequests(t *testing.T) {
	s := openRealStore(t)
	valid := append([]string{}, validContact...)
	withValid := func(extra ...string) string { return form(append(append([]string{}, valid...), extra...)...) }
	jsonReq := func(body string) *http.Request {
		r := postJSON(body)
		r.Header.Set("Origin", "https://example.com")
		return r
	}
	// The counters live in a registry keyed by form name and outlive a Config, so the
	// checks compare with what they read in setup, not with zero.
	var droppedBefore, dedupedBefore uint64
	exhaust := func(c *Config, ip string) { // use up the client's allowance
		for range c.RateLimit.Requests {
			c.limiter.allow(ip, testNow)
		}
	}

	tests := []struct {
		name   string
		setup  func(t *testing.T, c *Config)
		req    func(t *testing.T) *http.Request
		code   int
		status outbox.SubmissionStatus // "" = nothing stored
		reason string
		why    string // why nothing is stored (documentation of the expectation)
		check  func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row)
	}{
		{name: "valid urlencoded post", req: func(t *testing.T) *http.Request { return postForm(withValid()) },
			code: 303, status: outbox.SubmissionAccepted},
		{name: "valid JSON post", req: func(t *testing.T) *http.Request {
			return jsonReq(`{"name":"Ada","email":"ada@example.com","message":"Hi"}`)
		}, code: 200, status: outbox.SubmissionAccepted},
		{name: "valid multipart post", req: func(t *testing.T) *http.Request {
			r := postMultipart(t, valid...)
			r.Header.Set("Origin", "https://example.com")
			return r
		}, code: 303, status: outbox.SubmissionAccepted},
		{name: "invalid UTF-8 in a urlencoded value", req: func(t *testing.T) *http.Request { return postForm("name=%FF%FE&email=a%40b.c&message=x") },
			code: 400, why: "refused before storing: fields must be valid UTF-8"},
		{name: "invalid UTF-8 in a JSON body", req: func(t *testing.T) *http.Request { return jsonReq("{\"name\":\"\xff\"}") },
			code: 400, why: "refused: JSON must be UTF-8 (encoding/json would silently replace it)"},
		{name: "NUL byte in a value", req: func(t *testing.T) *http.Request { return postForm("name=A%00da&email=a%40b.c&message=x") },
			code: 400, why: "NUL is refused: it truncates strings in C-based tools and mail software"},
		{name: "NUL byte in a field name", req: func(t *testing.T) *http.Request { return postForm(withValid("x\x00y", "1")) },
			code: 400, why: "NUL is refused in names too"},
		{name: "10,000 fields", req: func(t *testing.T) *http.Request { return postForm(strings.Repeat("a=1&", 10000)) },
			code: 400, why: "over max_fields (100): refused while reading, before anything is kept"},
		{name: "duplicate keys are merged, not lost", req: func(t *testing.T) *http.Request { return postForm(withValid("topic", "a", "topic", "b")) },
			code: 303, status: outbox.SubmissionAccepted,
			check: func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row) {
				if !strings.Contains(r.Data, `"topic":"a, b"`) {
					t.Errorf("data %s: want topic \"a, b\"", r.Data)
				}
			}},
		{name: "nested JSON object", req: func(t *testing.T) *http.Request {
			return jsonReq(`{"name":"Ada","email":"ada@example.com","message":{"x":1}}`)
		}, code: 400, why: "nested objects cannot be shown faithfully in a notification"},
		{name: "JSON array value", req: func(t *testing.T) *http.Request { return jsonReq(`{"name":["Ada","Bob"]}`) },
			code: 400, why: "arrays are refused like nested objects"},
		{name: "JSON body that is an array", req: func(t *testing.T) *http.Request { return jsonReq(`[{"name":"Ada"}]`) },
			code: 400, why: "the body must be one object of fields"},
		{name: "JSON with data after the object", req: func(t *testing.T) *http.Request { return jsonReq(`{"name":"Ada"}{"name":"Bob"}`) },
			code: 400, why: "two documents in one body are refused"},
		{name: "truncated JSON", req: func(t *testing.T) *http.Request { return jsonReq(`{"name":"Ada",`) },
			code: 400, why: "a truncated document is malformed"},
		{name: "wrong Content-Type", req: func(t *testing.T) *http.Request {
			r := postForm(withValid())
			r.Header.Set("Content-Type", "text/plain")
			return r
		}, code: 415, why: "only urlencoded, multipart and JSON are read"},
		{name: "missing Content-Type", req: func(t *testing.T) *http.Request {
			r := postForm(withValid())
			r.Header.Del("Content-Type")
			return r
		}, code: 415, why: "no content type, no parsing"},
		{name: "empty body is stored as a schema violation", req: func(t *testing.T) *http.Request { return postForm("") },
			code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonSchemaViolation},
		{name: "multipart without a boundary", req: func(t *testing.T) *http.Request {
			r := postForm("--X\r\n")
			r.Header.Set("Content-Type", "multipart/form-data")
			return r
		}, code: 400, why: "a multipart body cannot be split without its boundary"},
		{name: "multipart with a file", req: func(t *testing.T) *http.Request {
			r := postMultipart(t, append(append([]string{}, valid...), "file:cv", "%PDF-1.4")...)
			r.Header.Set("Origin", "https://example.com")
			return r
		}, code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonFileRejected},
		{name: "CR/LF in the email field (header injection)", req: func(t *testing.T) *http.Request {
			return postForm(form("name", "Ada", "email", "ada@example.com\r\nBcc: victim@example.org", "message", "x"))
		}, code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonSchemaViolation},
		{name: "CR/LF in _replyto and _subject never reach a header", req: func(t *testing.T) *http.Request {
			return postForm(withValid("_replyto", "x@example.com\r\nBcc: v@example.org", "_subject", "Hi\r\nBcc: v@example.org"))
		}, code: 303, status: outbox.SubmissionAccepted,
			check: func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row) {
				res := mustParse(t, defendedConfig(t), postForm(withValid("_replyto", "x@example.com\r\nBcc: v@example.org", "_subject", "Hi\r\nBcc: v@example.org")))
				p := payloadOf(t, res.Deliveries[0])
				if p.ReplyTo != "ada@example.com" || strings.ContainsAny(p.Subject, "\r\n") {
					t.Errorf("reply-to %q subject %q: want the email field and a single line", p.ReplyTo, p.Subject)
				}
			}},
		{name: "1 MB field", req: func(t *testing.T) *http.Request { return postForm(withValid("blob", strings.Repeat("x", 1<<20))) },
			code: 413, why: "the body is bounded (256 KiB) before parsing"},
		{name: "1 MB body without a Content-Length", req: func(t *testing.T) *http.Request {
			r := postForm("")
			r.Body = io.NopCloser(io.MultiReader(strings.NewReader(withValid("blob", "")), strings.NewReader(strings.Repeat("x", 1<<20))))
			r.ContentLength = -1
			return r
		}, code: 413, why: "the limit is enforced while reading, not only from Content-Length"},
		{name: "300 KB body", req: func(t *testing.T) *http.Request { return postForm(withValid("blob", strings.Repeat("y", 300<<10))) },
			code: 413, why: "over the 256 KiB default"},
		{name: "slow body that hits the read deadline", req: func(t *testing.T) *http.Request {
			r := postForm("")
			r.Body = io.NopCloser(&slowBody{})
			r.ContentLength = -1
			return r
		}, code: 400, why: "an incomplete body is never stored half-read"},
		{name: "field value over its max_length is kept and refused", req: func(t *testing.T) *http.Request {
			return postForm(withValid("message", strings.Repeat("z", 10001)))
		}, code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonSchemaViolation},
		{name: "instruction over max_field_length", req: func(t *testing.T) *http.Request { return postForm(withValid("_subject", strings.Repeat("z", 10001))) },
			code: 400, why: "a special field is an instruction, not the visitor's content"},
		{name: "control character in a field name", req: func(t *testing.T) *http.Request { return postForm(withValid("na\x1bme", "x")) },
			code: 400, why: "field names reach text bodies and templates"},
		{name: "field name of 201 characters", req: func(t *testing.T) *http.Request { return postForm(withValid(strings.Repeat("n", 201), "x")) },
			code: 400, why: "field names are bounded"},
		{name: "bad percent escape", req: func(t *testing.T) *http.Request { return postForm("name=%zz") },
			code: 400, why: "malformed urlencoded body"},
		{name: "idempotency key of 201 characters", req: func(t *testing.T) *http.Request {
			r := postForm(withValid())
			r.Header.Set("Idempotency-Key", strings.Repeat("k", 201))
			return r
		}, code: 400, why: "keys are bounded"},
		{name: "idempotency key field with a control character", req: func(t *testing.T) *http.Request { return postForm(withValid("_idempotency_key", "a\x07b")) },
			code: 400, why: "keys must be printable"},
		{name: "GET", req: func(t *testing.T) *http.Request { return httptest.NewRequest(http.MethodGet, "/contact", nil) },
			code: 405, why: "forms are posted"},
		{name: "_next to another host is ignored", req: func(t *testing.T) *http.Request { return postForm(withValid("_next", "https://evil.example/phish")) },
			code: 303, status: outbox.SubmissionAccepted,
			check: wantLocation("/thanks.html")},
		{name: "_next javascript: URL is ignored", req: func(t *testing.T) *http.Request { return postForm(withValid("_next", "javascript:alert(1)")) },
			code: 303, status: outbox.SubmissionAccepted, check: wantLocation("/thanks.html")},
		{name: "_next protocol-relative //evil is ignored", req: func(t *testing.T) *http.Request { return postForm(withValid("_next", "//evil.example/")) },
			code: 303, status: outbox.SubmissionAccepted, check: wantLocation("/thanks.html")},
		{name: "_next on an allowed origin is followed", req: func(t *testing.T) *http.Request {
			return postForm(withValid("_next", "https://example.com/merci.html"))
		},
			code: 303, status: outbox.SubmissionAccepted, check: wantLocation("https://example.com/merci.html")},
		{name: "_next on the request's own host is followed", req: func(t *testing.T) *http.Request {
			r := postForm(withValid("_next", "http://forms.internal/done"))
			r.Host = "forms.internal"
			return r
		}, code: 303, status: outbox.SubmissionAccepted, check: wantLocation("http://forms.internal/done")},
		{name: "javascript: URL in a url field", req: func(t *testing.T) *http.Request { return postForm(withValid("website", "javascript:alert(1)")) },
			code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonSchemaViolation},
		{name: "number, one_of, pattern and min_length violations", req: func(t *testing.T) *http.Request {
			r := postForm(withValid("age", "0x10", "plan", "gold", "zip", "1234a", "nick", "ab"))
			r.Header.Set("Accept", "application/json")
			return r
		}, code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonSchemaViolation,
			check: func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row) {
				var a answer
				_ = json.Unmarshal(w.Body.Bytes(), &a)
				var got []string
				for _, v := range a.Errors {
					got = append(got, v.Field)
				}
				if strings.Join(got, ",") != "age,plan,zip,nick" {
					t.Errorf("errors for %v, want age,plan,zip,nick", got)
				}
			}},
		{name: "Origin null", req: func(t *testing.T) *http.Request {
			r := postForm(withValid())
			r.Header.Set("Origin", "null")
			return r
		}, code: 303, status: outbox.SubmissionQuarantined, reason: outbox.ReasonOriginRejected, check: noCORS},
		{name: "Origin of another site", req: func(t *testing.T) *http.Request {
			r := postForm(withValid())
			r.Header.Set("Origin", "https://evil.example")
			r.Header.Set("Accept", "application/json")
			return r
		}, code: 200, status: outbox.SubmissionQuarantined, reason: outbox.ReasonOriginRejected, check: noCORS},
		{name: "Origin with the right host but http", req: func(t *testing.T) *http.Request {
			r := postForm(withValid())
			r.Header.Set("Origin", "http://example.com")
			return r
		}, code: 303, status: outbox.SubmissionQuarantined, reason: outbox.ReasonOriginRejected},
		{name: "no Origin, Referer on the allowed site", req: func(t *testing.T) *http.Request {
			r := postForm(withValid())
			r.Header.Del("Origin")
			return r
		}, code: 303, status: outbox.SubmissionAccepted},
		{name: "no Origin, Referer of another site", req: func(t *testing.T) *http.Request {
			r := postForm(withValid())
			r.Header.Del("Origin")
			r.Header.Set("Referer", "https://evil.example/form.html")
			return r
		}, code: 303, status: outbox.SubmissionQuarantined, reason: outbox.ReasonOriginRejected},
		{name: "neither Origin nor Referer", req: func(t *testing.T) *http.Request {
			r := postForm(withValid())
			r.Header.Del("Origin")
			r.Header.Del("Referer")
			return r
		}, code: 303, status: outbox.SubmissionQuarantined, reason: outbox.ReasonOriginRejected},
		{name: "allowed Origin gets the CORS grant", req: func(t *testing.T) *http.Request {
			r := postForm(withValid())
			r.Header.Set("Accept", "application/json")
			return r
		}, code: 200, status: outbox.SubmissionAccepted,
			check: func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row) {
				if got := w.Header().Get("Access-Control-Allow-Origin"); got != "https://example.com" {
					t.Errorf("Access-Control-Allow-Origin %q", got)
				}
			}},
		{name: "honeypot filled", req: func(t *testing.T) *http.Request { return postForm(withValid("_gotcha", "http://spam.example")) },
			code: 303, status: outbox.SubmissionSpam, reason: outbox.ReasonHoneypot},
		{name: "over the rate limit: 429, stored for review", setup: func(t *testing.T, c *Config) { exhaust(c, "192.0.2.1") },
			req: func(t *testing.T) *http.Request { return postForm(withValid()) }, code: 429,
			status: outbox.SubmissionQuarantined, reason: outbox.ReasonRateLimited,
			check: func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row) {
				if got := w.Header().Get("Retry-After"); got != "20" {
					t.Errorf("Retry-After %q, want 20 (one of 3 posts per minute)", got)
				}
			}},
		{name: "over the rate limit and the storage quota: 429, nothing stored", setup: func(t *testing.T, c *Config) {
			exhaust(c, "192.0.2.1")
			c.limiter.storeQuota(testNow)
			droppedBefore = c.counters.RateLimitedDropped.Load()
		}, req: func(t *testing.T) *http.Request { return postForm(withValid()) }, code: 429,
			why: "the form already stored its quota of rate_limited rows this window; only counted",
			check: func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row) {
				if c.counters.RateLimitedDropped.Load() != droppedBefore+1 || w.Header().Get("Retry-After") == "" {
					t.Errorf("dropped counter %d (was %d), Retry-After %q", c.counters.RateLimitedDropped.Load(), droppedBefore, w.Header().Get("Retry-After"))
				}
			}},
		{name: "spoofed X-Forwarded-For from an untrusted peer does not escape the limit",
			setup: func(t *testing.T, c *Config) { exhaust(c, "192.0.2.1") },
			req: func(t *testing.T) *http.Request {
				r := postForm(withValid())
				r.Header.Set("X-Forwarded-For", "203.0.113.77")
				return r
			}, code: 429, status: outbox.SubmissionQuarantined, reason: outbox.ReasonRateLimited,
			check: func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row) {
				if !strings.Contains(r.Meta, c.hashIP("192.0.2.1")) {
					t.Errorf("meta %s: want the peer's hash, not the spoofed address's", r.Meta)
				}
			}},
		{name: "double click answered with the first id", setup: func(t *testing.T, c *Config) {
			w := s.serve(t, c, postForm(withValid("marker", "double")))
			if w.Code != 303 {
				t.Fatalf("first click: %d", w.Code)
			}
			dedupedBefore = c.counters.Deduplicated.Load()
		}, req: func(t *testing.T) *http.Request {
			r := postForm(withValid("marker", "double"))
			r.Header.Set("Accept", "application/json")
			return r
		}, code: 200, why: "same content, same client, within 10s: the first post's id is the answer",
			check: func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row) {
				if !strings.Contains(w.Body.String(), `"duplicate":true`) || c.counters.Deduplicated.Load() != dedupedBefore+1 {
					t.Errorf("answer %s, deduplicated %d (was %d)", w.Body, c.counters.Deduplicated.Load(), dedupedBefore)
				}
			}},
		{name: "same content from another client is stored", setup: func(t *testing.T, c *Config) {
			s.serve(t, c, postForm(withValid("marker", "other-client")))
		}, req: func(t *testing.T) *http.Request {
			r := postForm(withValid("marker", "other-client"))
			r.RemoteAddr = "198.51.100.9:4000"
			return r
		}, code: 303, status: outbox.SubmissionAccepted},
		{name: "repeated idempotency key writes nothing", setup: func(t *testing.T, c *Config) {
			r := postForm(withValid())
			r.Header.Set("Idempotency-Key", "hostile-key")
			s.serve(t, c, r)
		}, req: func(t *testing.T) *http.Request {
			r := postForm(withValid())
			r.Header.Set("Idempotency-Key", "hostile-key")
			return r
		}, code: 303, why: "the store finds (form, key) with the same content and returns the original"},
		{name: "reused idempotency key with other content is kept, refused and not sent", setup: func(t *testing.T, c *Config) {
			r := postForm(withValid())
			r.Header.Set("Idempotency-Key", "hostile-key-2")
			s.serve(t, c, r)
		}, req: func(t *testing.T) *http.Request {
			r := postForm(withValid("message", "different"))
			r.Header.Set("Idempotency-Key", "hostile-key-2")
			return r
		}, code: 422, status: outbox.SubmissionQuarantined, reason: outbox.ReasonIdempotencyKeyReused},
		{name: "unknown fields kept but capped in count and size", req: func(t *testing.T) *http.Request {
			extra := []string{}
			for i := range 30 {
				extra = append(extra, "extra"+strings.Repeat("x", i), strings.Repeat("v", 3000))
			}
			return postForm(withValid(extra...))
		}, code: 303, status: outbox.SubmissionAccepted,
			check: func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row) {
				var data map[string]string
				_ = json.Unmarshal([]byte(r.Data), &data)
				if len(data) != 3+DefaultMaxUnknown || len(data["extra"]) != DefaultMaxUnknownLen {
					t.Errorf("%d fields stored (want %d), extra has %d characters", len(data), 3+DefaultMaxUnknown, len(data["extra"]))
				}
			}},
		{name: "_test flag stored", req: func(t *testing.T) *http.Request { return postForm(withValid("_test", "1")) },
			code: 303, status: outbox.SubmissionAccepted,
			check: func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row) {
				if !r.Test || strings.Contains(r.Data, "_test") {
					t.Errorf("test flag %v, data %s", r.Test, r.Data)
				}
			}},
		{name: "captcha token fields never reach the data", req: func(t *testing.T) *http.Request {
			return postForm(withValid("cf-turnstile-response", "tok", "g-recaptcha-response", "tok", "h-captcha-response", "tok"))
		}, code: 303, status: outbox.SubmissionAccepted,
			check: func(t *testing.T, c *Config, w *httptest.ResponseRecorder, r row) {
				if strings.Contains(r.Data, "response") {
					t.Errorf("data %s", r.Data)
				}
			}},
	}
	if len(tests) < 40 {
		t.Fatalf("only %d hostile requests", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defendedConfig(t)
			if tt.setup != nil {
				tt.setup(t, c)
			}
			before := s.rows(t)
			w := s.serve(t, c, tt.req(t))
			if w.Code != tt.code {
				t.Errorf("status %d, want %d; body %s", w.Code, tt.code, w.Body)
			}
			added := newRows(t, before, s.rows(t))
			var got row
			switch {
			case tt.status == "" && len(added) != 0:
				t.Errorf("stored %+v, want nothing (%s)", added, tt.why)
			case tt.status != "" && len(added) != 1:
				t.Fatalf("stored %d rows, want one %s/%s", len(added), tt.status, tt.reason)
			case tt.status != "":
				got = added[0]
				if got.Status != string(tt.status) || got.Reason != tt.reason {
					t.Errorf("stored %s/%s, want %s/%s", got.Status, got.Reason, tt.status, tt.reason)
				}
				if len(got.Events) == 0 || got.Events[0] != outbox.EventSubmissionReceived {
					t.Errorf("events %v", got.Events)
				}
				wantDelivery := "pending"
				if tt.status != outbox.SubmissionAccepted {
					wantDelivery = "skipped"
				}
				for _, d := range got.Deliveries {
					if !strings.HasSuffix(d, " "+wantDelivery+" 0") {
						t.Errorf("delivery %q, want %s", d, wantDelivery)
					}
				}
			}
			if tt.check != nil {
				tt.check(t, c, w, got)
			}
		})
	}
}

func wantLocation(want string) func(*testing.T, *Config, *httptest.ResponseRecorder, row) {
	return func(t *testing.T, _ *Config, w *httptest.ResponseRecorder, _ row) {
		if got := w.Header().Get("Location"); got != want {
			t.Errorf("Location %q, want %q", got, want)
		}
	}
}

func noCORS(t *testing.T, _ *Config, w *httptest.ResponseRecorder, _ row) {
	if got := w.Header().Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("Access-Control-Allow-Origin %q for a rejected origin", got)
	}
}
