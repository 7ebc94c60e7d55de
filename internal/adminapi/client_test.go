package adminapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// serve starts an admin endpoint that answers every request with status and body, and
// records the last request.
func serve(t *testing.T, status int, body string) (*Client, *http.Request) {
	t.Helper()
	var got http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = *r.Clone(context.Background())
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return New("tcp", srv.Listener.Addr().String()), &got
}

// Caddy's JSON error body becomes an *Error whose Status and Message callers can test.
func TestErrorDecodesCaddyJSONError(t *testing.T) {
	c, _ := serve(t, http.StatusNotFound, `{"error":"submission 5d0c not found"}`+"\n")
	_, err := c.Call(context.Background(), http.MethodGet, "submissions/5d0c", nil)
	var ae *Error
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if ae.Status != http.StatusNotFound || ae.Message != "submission 5d0c not found" {
		t.Errorf("Error = {%d %q}, want {404 %q}", ae.Status, ae.Message, "submission 5d0c not found")
	}
	if want := "form_outbox admin API: HTTP 404: submission 5d0c not found"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

// An answer that is not a JSON error (a proxy's page, a health body) keeps its body and
// says what it can.
func TestErrorOfOtherBodies(t *testing.T) {
	for _, c := range []struct {
		status      int
		body, msg   string
		wantRawBody bool
	}{
		{http.StatusBadGateway, "upstream down\n", "upstream down", false},
		{http.StatusForbidden, "", "Forbidden", false},
		{http.StatusServiceUnavailable, `{"status":"unhealthy","problems":["storage unreachable"]}`, `{"status":"unhealthy","problems":["storage unreachable"]}`, true},
		{http.StatusInternalServerError, strings.Repeat("x", 2000), strings.Repeat("x", maxMessage) + "...", false},
	} {
		client, _ := serve(t, c.status, c.body)
		_, err := client.Call(context.Background(), http.MethodGet, "health", nil)
		var ae *Error
		if !errors.As(err, &ae) {
			t.Fatalf("HTTP %d: err = %v, want *Error", c.status, err)
		}
		if ae.Status != c.status || ae.Message != c.msg {
			t.Errorf("HTTP %d %q: Error = {%d %q}, want message %q", c.status, c.body, ae.Status, ae.Message, c.msg)
		}
		if string(ae.Body) != c.body {
			t.Errorf("HTTP %d: Body = %q, want the answer %q", c.status, ae.Body, c.body)
		}
	}
}

// A successful answer is returned whole; the request goes below Prefix with its query and
// an Origin naming the admin address, which Caddy's origin check wants.
func TestCallSendsPathQueryAndOrigin(t *testing.T) {
	c, got := serve(t, http.StatusOK, `{"items":[]}`)
	body, err := c.Call(context.Background(), http.MethodGet, "submissions", url.Values{"form": {"contact"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != `{"items":[]}` {
		t.Errorf("body %q", body)
	}
	if got.URL.Path != "/form_outbox/submissions" || got.URL.Query().Get("form") != "contact" {
		t.Errorf("request %s", got.URL)
	}
	if o := got.Header.Get("Origin"); o != "http://"+got.Host {
		t.Errorf("Origin %q, want http://%s", o, got.Host)
	}
}

// Over a unix socket (admin unix//path) there is no host to name: no Origin is sent.
func TestCallOverUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "admin.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var origin []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin = r.Header.Values("Origin")
		io.WriteString(w, r.Method+" "+r.URL.Path)
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)

	body, err := New("unix", sock).Call(context.Background(), http.MethodPost, "spool/replay", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != "POST /form_outbox/spool/replay" {
		t.Errorf("answer %q", body)
	}
	if len(origin) != 0 {
		t.Errorf("Origin %q sent over a socket", origin)
	}
}
