package intake

import (
	"sync"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

const (
	// DefaultDedupeWindow is how long an identical post from the same client counts as a
	// double click rather than a new message.
	DefaultDedupeWindow = 10 * time.Second
	// dedupeEntries bounds the memory of recent posts (about 200 bytes each).
	dedupeEntries = 4096
)

// recentPosts remembers what was stored in the last dedupe window, in memory. This is a
// deliberate choice over a database lookup: a double click reaches the same process a few
// hundred milliseconds later, so an in-process map answers it without a query on every
// post; behind a load balancer that splits the two clicks across instances the second
// one is stored too, which costs a duplicate row but never a lost lead.
type recentPosts struct {
	window time.Duration
	mu     sync.Mutex
	posts  *lru[recentPost]
}

type recentPost struct {
	stored outbox.AcceptResult
	at     time.Time
}

func newRecentPosts(window time.Duration) *recentPosts {
	return &recentPosts{window: window, posts: newLRU[recentPost](dedupeEntries)}
}

// lookup returns the stored answer of an identical post within the window.
func (rp *recentPosts) lookup(key string, now time.Time) (outbox.AcceptResult, bool) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	p, ok := rp.posts.get(key)
	if !ok || now.Sub(p.at) > rp.window || now.Before(p.at) {
		return outbox.AcceptResult{}, false
	}
	return p.stored, true
}

func (rp *recentPosts) remember(key string, stored outbox.AcceptResult, now time.Time) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.posts.put(key, recentPost{stored: stored, at: now})
}

// dedupeKey identifies "the same content from the same client": the content hash (form
// and data) and the client's hashed address; empty when the client is unknown.
func dedupeKey(sub *outbox.Submission, clientHash string) string {
	if clientHash == "" {
		return ""
	}
	return sub.ContentHash + "|" + clientHash
}

// remember records a stored submission so that an identical post from the same client
// within the dedupe window is answered with its id instead of being stored again. Call
// it after the store (or the spool) took res. Posts that were not answered as a success
// (422 schema violation or reused idempotency key, 429 rate limited) are not remembered:
// the visitor's next try is judged afresh. Duplicates and posts that were never stored
// are ignored too.
func (c *Config) remember(res *Result, stored outbox.AcceptResult) {
	reason := res.Submission.Reason
	if c.recent == nil || res.Stored != nil || res.dedupeKey == "" || stored.Duplicate || stored.KeyReused ||
		reason == outbox.ReasonSchemaViolation || reason == outbox.ReasonRateLimited {
		return
	}
	c.recent.remember(res.dedupeKey, stored, res.Submission.CreatedAt)
}
