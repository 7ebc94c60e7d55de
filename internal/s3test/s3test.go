// Package s3test runs an S3-compatible server on loopback for tests: gofakes3 (a Go
// implementation of the S3 REST API, github.com/johannesboyne/gofakes3) over real HTTP,
// so the AWS SDK talks to it as to any self-hosted store. It can be taken down and
// brought back on the same address with its objects, to test a bucket outage.
package s3test

import (
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Server is one fake S3 endpoint holding one bucket.
type Server struct {
	Bucket  string
	addr    string
	handler http.Handler

	mu  sync.Mutex
	srv *http.Server
}

// Start serves a new store with bucket on 127.0.0.1; the test's cleanup stops it.
func Start(t testing.TB, bucket string) *Server {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatalf("s3test: create bucket: %v", err)
	}
	s := &Server{Bucket: bucket, handler: gofakes3.New(be, gofakes3.WithTimeSkewLimit(0)).Server()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(s.Down)
	return s
}

// URL is the endpoint (path-style addressing).
func (s *Server) URL() string { return "http://" + s.addr }

func (s *Server) serve(ln net.Listener) {
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Down stops answering: connections are refused until Up.
func (s *Server) Down() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Up serves again on the same address, with the objects kept. (Go's listeners set
// SO_REUSEADDR, so the port closed by Down can be bound again at once.)
func (s *Server) Up(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Fatalf("s3test: listen again on %s: %v", s.addr, err)
	}
	s.serve(ln)
}
