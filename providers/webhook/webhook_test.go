package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var fixedNow = time.Unix(1700000000, 0)

func newProvider(timeout time.Duration) *webhook.Provider {
	return webhook.New(webhook.Config{
		Secret:  func(string) string { return secret },
		Timeout: timeout,
		Now:     func() time.Time { return fixedNow },
	})
}

// TestSignatureVerifies checks the request against an independent implementation of the
// Standard Webhooks verification a receiver runs.
func TestSignatureVerifies(t *testing.T) {
	type seen struct {
		header http.Header
		body   []byte
		method string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Header.Clone(), b, r.Method}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	body := []byte(`{"form":"contact","data":{"name":"Zoë"}}`)
	res, err := newProvider(0).Send(context.Background(), providers.Message{ID: "msg_1", Channel: "webhook", URL: srv.URL + "/hook", Body: body})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if res.Provider != "webhook" || res.MessageID != "msg_1" {
		t.Fatalf("result = %+v", res)
	}
	s := <-got
	if s.method != http.MethodPost || string(s.body) != string(body) {
		t.Fatalf("receiver got %s %q", s.method, s.body)
	}
	if s.header.Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type = %q", s.header.Get("Content-Type"))
	}
	id, ts := s.header.Get("webhook-id"), s.header.Get("webhook-timestamp")
	if id != "msg_1" || ts != strconv.FormatInt(fixedNow.Unix(), 10) {
		t.Fatalf("webhook-id %q webhook-timestamp %q", id, ts)
	}
	key, err := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(s.body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if got := s.header.Get("webhook-signature"); got != want {
		t.Fatalf("webhook-signature = %q, want %q", got, want)
	}
}

func TestStatusClasses(t *testing.T) {
	cases := []struct {
		status     int
		header     map[string]string
		wantErr    bool
		class      providers.Class
		retryAfter time.Duration
	}{
		{status: 200},
		{status: 202},
		{status: 301, header: map[string]string{"Location": "https://elsewhere.example/"}, wantErr: true, class: providers.Permanent},
		{status: 307, header: map[string]string{"Location": "/other"}, wantErr: true, class: providers.Permanent},
		{status: 400, wantErr: true, class: providers.Permanent},
		{status: 401, wantErr: true, class: providers.Permanent},
		{status: 404, wantErr: true, class: providers.Permanent},
		{status: 408, wantErr: true, class: providers.Temporary},
		{status: 410, wantErr: true, class: providers.Permanent},
		{status: 429, header: map[string]string{"Retry-After": "120"}, wantErr: true, class: providers.Temporary, retryAfter: 2 * time.Minute},
		{status: 429, wantErr: true, class: providers.Temporary},
		{status: 500, wantErr: true, class: providers.Temporary},
		{status: 503, header: map[string]string{"Retry-After": "30"}, wantErr: true, class: providers.Temporary, retryAfter: 30 * time.Second},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			_, err := newProvider(0).Send(context.Background(), providers.Message{ID: "m", URL: srv.URL, Body: []byte(`{}`)})
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("err = %v, want success", err)
				}
				return
			}
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *providers.Error", err)
			}
			if pe.Class != tc.class || pe.HTTPStatus != tc.status || pe.RetryAfter != tc.retryAfter {
				t.Fatalf("got class %v status %d retry-after %v, want %v %d %v", pe.Class, pe.HTTPStatus, pe.RetryAfter, tc.class, tc.status, tc.retryAfter)
			}
			// A redirect, 401, 404 and 410 are the endpoint's failure (it parks); 400 is
			// this message's, and a temporary answer is nobody's yet.
			wantDest := tc.class == providers.Permanent && tc.status != 400
			if pe.Destination != wantDest {
				t.Errorf("destination %v, want %v", pe.Destination, wantDest)
			}
			if hits.Load() != 1 {
				t.Fatalf("receiver hit %d times, want 1 (a redirect must not be followed)", hits.Load())
			}
		})
	}
}

func TestTimeoutIsAmbiguous(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	_, err := newProvider(100*time.Millisecond).Send(context.Background(), providers.Message{ID: "m", URL: srv.URL, Body: []byte(`{}`)})
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Class != providers.Ambiguous || pe.Code != "timeout" {
		t.Fatalf("err = %v, want Ambiguous timeout", err)
	}
}

func TestConnectionResetAfterWriteIsAmbiguous(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	_, err := newProvider(0).Send(context.Background(), providers.Message{ID: "m", URL: srv.URL, Body: []byte(`{}`)})
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Class != providers.Ambiguous {
		t.Fatalf("err = %v, want Ambiguous", err)
	}
}

func TestConnectionRefusedIsTemporary(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = newProvider(0).Send(context.Background(), providers.Message{ID: "m", URL: "http://" + addr + "/", Body: []byte(`{}`)})
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Class != providers.Temporary {
		t.Fatalf("err = %v, want Temporary", err)
	}
}

func TestBadTargetsArePermanent(t *testing.T) {
	p := webhook.New(webhook.Config{Secret: func(string) string { return "whsec_not base64!" }})
	for _, u := range []string{"", "ftp://example.com/x", "/relative"} {
		_, err := p.Send(context.Background(), providers.Message{ID: "m", URL: u})
		if pe := providers.Classify(err); err == nil || pe.Class != providers.Permanent {
			t.Errorf("url %q: err = %v, want Permanent", u, err)
		}
	}
	_, err := p.Send(context.Background(), providers.Message{ID: "m", URL: "http://127.0.0.1:1/"})
	if pe := providers.Classify(err); err == nil || pe.Class != providers.Permanent || pe.Code != "bad_secret" {
		t.Errorf("bad secret: err = %v, want Permanent bad_secret", err)
	}
}
