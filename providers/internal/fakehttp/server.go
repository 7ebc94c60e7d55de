// Package fakehttp is the machinery shared by the provider fakes (sesfake, resendfake, the chat fakes):
// a loopback HTTP server that records every request, answers from a script, can hang
// without answering, drop the connection, and refuse connections by closing its
// listener and reopening it later on the same address.
package fakehttp

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Request is one request the server received, recorded before it is answered.
type Request struct {
	Method string
	Path   string
	Query  string // the raw query, e.g. "wait=true"
	Header http.Header
	Body   []byte
	At     time.Time
}

// Action is how the server treats one request.
type Action int

const (
	// Answer writes the handler's answer.
	Answer Action = iota
	// Hang reads the request and never answers, until the client gives up or the server
	// closes: the "written, no answer" case.
	Hang
	// Drop reads the request and closes the connection without a byte of answer.
	Drop
)

// Handler answers a recorded request; n is its 1-based number. It returns the action
// and, for Answer, the status, headers and body to write.
type Handler func(n int, r Request) (Action, int, http.Header, []byte)

// Server is a scriptable loopback HTTP server. Safe for concurrent use.
type Server struct {
	handle Handler
	addr   string
	srv    *http.Server

	mu       sync.Mutex
	ln       net.Listener
	conns    map[net.Conn]struct{}
	requests []Request
	arrived  chan struct{} // closed and replaced on every request
	closing  chan struct{}
	closed   bool
}

// New starts a server on a free loopback port.
func New(h Handler) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake server: listen: %w", err)
	}
	s := &Server{handle: h, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{},
		arrived: make(chan struct{}), closing: make(chan struct{})}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState:         s.track,
	}
	s.serveOn(ln)
	return s, nil
}

// URL is the server's base URL, http://127.0.0.1:PORT (no trailing slash).
func (s *Server) URL() string { return "http://" + s.addr }

// Addr is host:port.
func (s *Server) Addr() string { return s.addr }

func (s *Server) serveOn(ln net.Listener) {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	go s.srv.Serve(ln) //nolint:errcheck // returns when the listener closes
}

func (s *Server) track(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, At: time.Now()}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	close(s.arrived)
	s.arrived = make(chan struct{})
	closing := s.closing
	s.mu.Unlock()

	action, status, hdr, out := s.handle(n, req)
	switch action {
	case Hang:
		select {
		case <-r.Context().Done():
		case <-closing:
		}
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
	case Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
	default:
		for k, vs := range hdr {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(status)
		_, _ = w.Write(out)
	}
}

// Refuse closes the listener and every open connection: from now on connecting fails
// with "connection refused" (the request is never written) until Resume.
func (s *Server) Refuse() {
	s.mu.Lock()
	ln := s.ln
	s.ln = nil
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for _, c := range conns {
		c.Close()
	}
}

// Resume listens again on the same address after Refuse.
func (s *Server) Resume() error {
	s.mu.Lock()
	if s.ln != nil || s.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("fake server: listen again on %s: %w", s.addr, err)
	}
	s.serveOn(ln)
	return nil
}

// Requests returns a copy of every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count is the number of requests received so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// WaitCount waits until at least n requests arrived, or fails after timeout.
func (s *Server) WaitCount(n int, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, arrived := len(s.requests), s.arrived
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-arrived:
		case <-deadline.C:
			return fmt.Errorf("fake server: %d requests after %s, want %d", s.Count(), timeout, n)
		}
	}
}

// Close releases hanging requests and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	s.Refuse()
	_ = s.srv.Close()
}

// JSON encodes v for an answer body; it panics on values that cannot be encoded, which
// in a fake is a bug in the fake.
func JSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("fake server: encode answer: " + err.Error())
	}
	return b
}

// MustNew is New for a fake's constructor, which has no error to return: failing to
// listen on loopback is a broken test machine, so it panics.
func MustNew(h Handler) *Server {
	s, err := New(h)
	if err != nil {
		panic(err)
	}
	return s
}

// Unanswered is the action for a scripted reply that hangs or drops, and whether it
// does; a fake checks it before building an answer.
func Unanswered(hang, drop bool) (Action, bool) {
	switch {
	case hang:
		return Hang, true
	case drop:
		return Drop, true
	}
	return Answer, false
}
