package webhook_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/webhook"
)

// countingServer answers 204 and counts the connections its clients opened.
func countingServer(t testing.TB) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// sendRounds sends rounds x parallel webhooks, parallel at a time, as a worker with that
// many send slots does.
func sendRounds(t testing.TB, p *webhook.Provider, url string, parallel, rounds int) {
	for range rounds {
		var wg sync.WaitGroup
		for i := range parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := p.Send(context.Background(), providers.Message{ID: "msg", Channel: "webhook", URL: url, Body: []byte(`{}`)}); err != nil {
					t.Errorf("send %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
	}
}

// TestConcurrentSendsReuseConnections: with 16 sends in flight to one receiver, round
// after round, the receiver sees about 16 connections in all, not new ones every round
// (http.DefaultTransport keeps only 2 idle per host, so it saw ~14 new per round).
func TestConcurrentSendsReuseConnections(t *testing.T) {
	srv, conns := countingServer(t)
	const parallel, rounds = 16, 10
	sendRounds(t, webhook.New(webhook.Config{}), srv.URL+"/hook", parallel, rounds)
	if n := conns.Load(); n > 2*parallel {
		t.Fatalf("the receiver saw %d connections for %d rounds of %d parallel sends; want at most %d (kept alive)", n, rounds, parallel, 2*parallel)
	}
}

// BenchmarkParallelSends is 64 sends in flight to one loopback receiver, with the
// provider's default transport and with a plain clone of http.DefaultTransport (2 idle
// connections per host), side by side.
func BenchmarkParallelSends(b *testing.B) {
	for _, tc := range []struct {
		name   string
		client *http.Client
	}{
		{"default", nil},
		{"idle2", &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv, conns := countingServer(b)
			p := webhook.New(webhook.Config{Client: tc.client})
			b.ResetTimer()
			for range b.N {
				sendRounds(b, p, srv.URL+"/hook", 64, 1)
			}
			b.ReportMetric(float64(conns.Load())/float64(b.N), "conns/round")
		})
	}
}
