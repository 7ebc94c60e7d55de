package intake

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var testNow = time.Date(2025, 3, 1, 12, 30, 0, 0, time.UTC)

// contactConfig is the contact form of docs/caddyfile.md, 'A complete example' (its
// fields, redirect and notify lines), provisioned.
func contactConfig(t testing.TB) *Config {
	t.Helper()
	c := &Config{
		Form: "contact",
		Fields: []FieldSpec{
			{Name: "name", Required: true, MaxLength: 120},
			{Name: "email", Required: true, Email: true},
			{Name: "message", Required: true, MaxLength: 5000},
		},
		Redirect: "/thanks.html",
		Routes: []Route{
			{Channel: outbox.ChannelEmail, To: []string{"sales@example.com", "ops@example.com"}, Subject: "New enquiry from {field.name}"},
			{Channel: outbox.ChannelWebhook, URL: "https://crm.example.com/hooks/forms", Secret: "whsec_c2VjcmV0"},
		},
		IPHashKey: []byte("test-key"),
	}
	if err := c.Provision(); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return c
}

// form builds an urlencoded body from name/value pairs, in order.
func form(pairs ...string) string {
	var b strings.Builder
	for i := 0; i < len(pairs); i += 2 {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(pairs[i]) + "=" + url.QueryEscape(pairs[i+1]))
	}
	return b.String()
}

func postForm(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/contact", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "https://example.com")
	r.Header.Set("Referer", "https://example.com/contact.html")
	r.Header.Set("User-Agent", "TestBrowser/1.0")
	return r
}

func postJSON(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/contact", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// postMultipart builds a multipart body from name/value pairs; a name starting with
// "file:" becomes a file part.
func postMultipart(t testing.TB, pairs ...string) *http.Request {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for i := 0; i < len(pairs); i += 2 {
		var err error
		if name, ok := strings.CutPrefix(pairs[i], "file:"); ok {
			var fw interface{ Write([]byte) (int, error) }
			fw, err = mw.CreateFormFile(name, "cv.pdf")
			if err == nil {
				_, err = fw.Write([]byte(pairs[i+1]))
			}
		} else {
			err = mw.WriteField(pairs[i], pairs[i+1])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/contact", &b)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	return r
}

func mustParse(t testing.TB, c *Config, r *http.Request) *Result {
	t.Helper()
	res, err := c.Parse(r, testNow)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return res
}

// stored simulates a store that committed res as is.
func stored(res *Result) outbox.AcceptResult {
	return outbox.AcceptResult{ID: res.Submission.ID, Status: res.Submission.Status}
}

func payloadOf(t testing.TB, d outbox.Delivery) outbox.Payload {
	t.Helper()
	var p outbox.Payload
	if err := json.Unmarshal(d.Payload, &p); err != nil {
		t.Fatalf("payload of %s: %v", d.Recipient, err)
	}
	return p
}

func fields(pairs ...string) outbox.Fields {
	out := outbox.Fields{}
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, outbox.Field{Name: pairs[i], Value: pairs[i+1]})
	}
	return out
}

var validContact = []string{"name", "Ada Lovelace", "email", "ada@example.com", "message", "Hello there"}
