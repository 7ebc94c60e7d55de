package browserclient

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// maxGzipped is the size budget for the script as a browser downloads it.
const maxGzipped = 5 * 1024

func get(t *testing.T, query string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/contact?"+query, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	if !Wants(r) {
		t.Fatalf("Wants(%q) = false", query)
	}
	w := httptest.NewRecorder()
	Serve(w, r)
	return w
}

func TestServedScriptIsSmallAndUnzipsToTheSource(t *testing.T) {
	w := get(t, "form_outbox=client.js", map[string]string{"Accept-Encoding": "br, gzip"})
	if w.Code != 200 || w.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("code %d, Content-Encoding %q; want 200 gzip", w.Code, w.Header().Get("Content-Encoding"))
	}
	if n := w.Body.Len(); n > maxGzipped {
		t.Errorf("served script is %d bytes gzipped, over the %d-byte budget", n, maxGzipped)
	}
	zr, err := gzip.NewReader(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(plain, source) {
		t.Fatalf("gunzipped body differs from client.js (err %v)", err)
	}
	if got := w.Header().Get("Content-Type"); got != "text/javascript; charset=utf-8" {
		t.Errorf("Content-Type = %q", got)
	}

	w = get(t, "form_outbox=client.js", nil)
	if w.Header().Get("Content-Encoding") != "" || !bytes.Equal(w.Body.Bytes(), source) {
		t.Errorf("without Accept-Encoding: want the plain script, got encoding %q", w.Header().Get("Content-Encoding"))
	}
}

func TestCachingHeaders(t *testing.T) {
	tests := []struct {
		name, query, cache string
	}{
		{"stable name is revalidated", "form_outbox=client.js", "no-cache"},
		{"hashed name is immutable", "form_outbox=" + HashedName(), "public, max-age=31536000, immutable"},
		{"an older hash gets the current script, revalidated", "form_outbox=client.0123456789abcdef.js", "no-cache"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, tt.query, nil)
			if w.Code != 200 {
				t.Fatalf("code %d", w.Code)
			}
			if got := w.Header().Get("Cache-Control"); got != tt.cache {
				t.Errorf("Cache-Control = %q, want %q", got, tt.cache)
			}
			if got, want := w.Header().Get("ETag"), `"`+contentHash(source)+`"`; got != want {
				t.Errorf("ETag = %q, want %q", got, want)
			}
			nm := get(t, tt.query, map[string]string{"If-None-Match": w.Header().Get("ETag")})
			if nm.Code != http.StatusNotModified || nm.Body.Len() != 0 {
				t.Errorf("If-None-Match: code %d, %d body bytes; want 304 and none", nm.Code, nm.Body.Len())
			}
		})
	}
	if want := "client." + contentHash(source) + ".js"; HashedName() != want {
		t.Errorf("HashedName() = %q, want %q", HashedName(), want)
	}
}

func TestWantsOnlyTheScript(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           bool
	}{
		{http.MethodGet, "/contact?form_outbox=client.js", true},
		{http.MethodHead, "/contact?form_outbox=client.js", true},
		{http.MethodGet, "/contact", false},
		{http.MethodGet, "/contact?form_outbox=admin", false},
		{http.MethodPost, "/contact?form_outbox=client.js", false},
	} {
		if got := Wants(httptest.NewRequest(tc.method, tc.target, nil)); got != tc.want {
			t.Errorf("Wants(%s %s) = %v, want %v", tc.method, tc.target, got, tc.want)
		}
	}
}
