package intake

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// FuzzParse feeds arbitrary bodies under each content type. Whatever arrives, Parse must
// not panic and must either make a well-formed submission or refuse with a 4xx: a 5xx
// would tell the client to retry a request that can never succeed; and it never accepts
// a body past the limit. The defences are on (allowed origins, monitor-mode drift,
// unknown-field caps, dedupe). Seeds live in testdata/fuzz/FuzzParse; `go test` runs
// them every time and scripts/test fuzzes for a bounded time.
func FuzzParse(f *testing.F) {
	f.Add("application/x-www-form-urlencoded", []byte("name=Ada&email=ada%40example.com&message=Hi"), "")
	f.Add("multipart/form-data; boundary=X", []byte("--X\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nAda\r\n--X--\r\n"), "key-1")
	f.Add("application/json", []byte(`{"name":"Ada","n":1,"b":true,"z":null}`), "")
	configs := map[string]*Config{}
	for _, mode := range []string{ModeEnforce, ModeMonitor} {
		c := contactConfig(f)
		c.Mode = mode
		c.MaxBodyBytes = 8 << 10
		c.MaxFields = 20
		c.MaxFieldLength = 5000
		c.AllowedOrigins = []string{"https://example.com"}
		c.MaxUnknownFields = 5
		c.MaxUnknownLength = 100
		if err := c.Provision(); err != nil {
			f.Fatal(err)
		}
		configs[mode] = c
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte, idemKey string) {
		for _, c := range configs {
			fuzzParseOnce(t, c, contentType, body, idemKey)
		}
	})
}

// fuzzParseOnce runs one fuzz input through c and checks what FuzzParse promises.
func fuzzParseOnce(t *testing.T, c *Config, contentType string, body []byte, idemKey string) {
	r := httptest.NewRequest(http.MethodPost, "/contact", bytes.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	r.Header.Set("Origin", "https://example.com")
	if idemKey != "" {
		// Header values the client itself could never send are out of scope.
		if strings.ContainsAny(idemKey, "\r\n\x00") {
			return
		}
		r.Header.Set("Idempotency-Key", idemKey)
	}
	res, err := c.Parse(r, testNow)
	if err != nil {
		var re *RequestError
		if !errors.As(err, &re) || re.Status < 400 || re.Status > 499 {
			t.Fatalf("Parse error %v is not a 4xx *RequestError", err)
		}
		c.writeError(httptest.NewRecorder(), r, err)
		return
	}
	if int64(len(body)) > c.MaxBodyBytes {
		t.Fatalf("accepted a body of %d bytes, limit %d", len(body), c.MaxBodyBytes)
	}
	sub := res.Submission
	if res.Stored != nil {
		return // a double post of an earlier input: answered with its id
	}
	if sub == nil || len(res.Deliveries) != 3 {
		t.Fatalf("result without a submission or with %d deliveries", len(res.Deliveries))
	}
	seen := map[string]bool{}
	for _, fl := range sub.Data {
		switch {
		case fl.Name == "" || strings.HasPrefix(fl.Name, "_") || seen[fl.Name]:
			t.Fatalf("bad or repeated field name %q in data", fl.Name)
		case !utf8.ValidString(fl.Name+fl.Value) || strings.ContainsAny(fl.Name+fl.Value, "\x00\r"):
			t.Fatalf("unnormalised field %q=%q", fl.Name, fl.Value)
		}
		seen[fl.Name] = true
		if !c.inSpec(fl.Name) && utf8.RuneCountInString(fl.Value) > c.MaxUnknownLength {
			t.Fatalf("unknown field %q over the cap", fl.Name)
		}
	}
	if c.Mode == ModeMonitor && sub.Reason == outbox.ReasonSchemaViolation {
		t.Fatalf("monitor mode quarantined a post for its schema")
	}
	if len(sub.Data) > len(c.Fields)+c.MaxUnknownFields {
		t.Fatalf("%d fields stored past the unknown-field cap", len(sub.Data))
	}
	if utf8.RuneCountInString(sub.IdempotencyKey) > MaxIdempotencyKeyLength || hasControl(sub.IdempotencyKey) {
		t.Fatalf("bad idempotency key %q", sub.IdempotencyKey)
	}
	for _, d := range res.Deliveries {
		p := payloadOf(t, d)
		if hasControl(p.Subject) || hasControl(p.ReplyTo) {
			t.Fatalf("header values with control characters: %q %q", p.Subject, p.ReplyTo)
		}
	}
	w := httptest.NewRecorder()
	c.writeAnswer(w, r, res, outbox.AcceptResult{ID: sub.ID, Status: sub.Status})
	if w.Code != 200 && w.Code != 303 && w.Code != 422 {
		t.Fatalf("answer %d", w.Code)
	}
}
