package fakehttp

import "sync"

// Script hands out the reply for each request: queued replies first, in order, then
// the function set with Func, then the default. R is a fake's own Reply type.
type Script[R any] struct {
	mu    sync.Mutex
	queue []R
	fn    func(n int, r Request) (R, bool)
	def   R
}

// Enqueue appends replies for the next requests.
func (s *Script[R]) Enqueue(rs ...R) {
	s.mu.Lock()
	s.queue = append(s.queue, rs...)
	s.mu.Unlock()
}

// SetDefault sets the reply used when the queue is empty and Func has no opinion.
func (s *Script[R]) SetDefault(r R) {
	s.mu.Lock()
	s.def = r
	s.mu.Unlock()
}

// Func installs fn, asked after the queue; ok=false falls through to the default.
func (s *Script[R]) Func(fn func(n int, r Request) (reply R, ok bool)) {
	s.mu.Lock()
	s.fn = fn
	s.mu.Unlock()
}

// Next returns the reply for request n.
func (s *Script[R]) Next(n int, r Request) R {
	s.mu.Lock()
	if len(s.queue) > 0 {
		next := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return next
	}
	fn, def := s.fn, s.def
	s.mu.Unlock()
	if fn != nil {
		if reply, ok := fn(n, r); ok {
			return reply
		}
	}
	return def
}

// Log is an append-only list safe for concurrent use: what a fake accepted.
type Log[T any] struct {
	mu    sync.Mutex
	items []T
}

// Add appends v.
func (l *Log[T]) Add(v T) {
	l.mu.Lock()
	l.items = append(l.items, v)
	l.mu.Unlock()
}

// All returns a copy of the items, in order.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.items...)
}
