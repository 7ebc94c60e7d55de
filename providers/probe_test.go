package providers_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// TestProbeURLConnectsWithoutARequest: a listening http server is reachable and gets no
// request; a closed port is not; an https server whose certificate is not trusted fails
// the handshake; the error never holds the URL's path.
func TestProbeURLConnectsWithoutARequest(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	t.Cleanup(srv.Close)
	if err := providers.ProbeURL(context.Background(), srv.URL+"/hooks/secret-path"); err != nil {
		t.Fatalf("probe: %v", err)
	}
	srv.Close()
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests reached the receiver", n)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/hooks/secret-path"
	ln.Close()
	if err := providers.ProbeURL(context.Background(), closed); err == nil || strings.Contains(err.Error(), "secret-path") {
		t.Fatalf("probe of a closed port: %v", err)
	}
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(tlsSrv.Close)
	if err := providers.ProbeURL(context.Background(), tlsSrv.URL+"/secret-path"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("probe of an untrusted certificate: %v", err)
	}
}
