package intake

import "container/list"

// lru is a map with a fixed capacity that forgets its least recently used key when full.
// The rate limiter and the dedupe memory keep per-client state in one, so a flood of
// distinct clients costs a bounded amount of memory instead of growing with the flood.
// It is not safe for concurrent use; its owner holds a mutex.
type lru[V any] struct {
	max   int
	items map[string]*list.Element
	order *list.List // front: most recently used
}

type lruEntry[V any] struct {
	key   string
	value V
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, items: make(map[string]*list.Element, min(max, 1024)), order: list.New()}
}

// get returns the value for key and marks it used.
func (l *lru[V]) get(key string) (*V, bool) {
	el, ok := l.items[key]
	if !ok {
		return nil, false
	}
	l.order.MoveToFront(el)
	return &el.Value.(*lruEntry[V]).value, true
}

// put stores value under key, evicting the least recently used key when full, and
// returns a pointer to the stored value for in-place updates.
func (l *lru[V]) put(key string, value V) *V {
	if el, ok := l.items[key]; ok {
		l.order.MoveToFront(el)
		e := el.Value.(*lruEntry[V])
		e.value = value
		return &e.value
	}
	if l.order.Len() >= l.max {
		oldest := l.order.Back()
		l.order.Remove(oldest)
		delete(l.items, oldest.Value.(*lruEntry[V]).key)
	}
	e := &lruEntry[V]{key: key, value: value}
	l.items[key] = l.order.PushFront(e)
	return &e.value
}

func (l *lru[V]) len() int { return l.order.Len() }
