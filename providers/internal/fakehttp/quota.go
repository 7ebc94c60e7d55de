package fakehttp

import (
	"sync"
	"time"
)

// Quota is a provider's own rate limit, as SES and Resend enforce it: a token bucket that
// refills at PerSecond and holds a second's worth, so short bunching (network jitter) is
// absorbed and only a sustained excess is refused. Safe for concurrent use.
type Quota struct {
	mu        sync.Mutex
	perSecond float64
	tokens    float64
	last      time.Time
	refused   int
}

// NewQuota returns a full bucket of perSecond tokens refilling at perSecond.
func NewQuota(perSecond float64) *Quota {
	return &Quota{perSecond: perSecond, tokens: perSecond}
}

// Allow takes a token for a request received at at, or counts a refusal.
func (q *Quota) Allow(at time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.last.IsZero() && at.After(q.last) {
		q.tokens = min(q.perSecond, q.tokens+at.Sub(q.last).Seconds()*q.perSecond)
	}
	if at.After(q.last) {
		q.last = at
	}
	if q.tokens < 1 {
		q.refused++
		return false
	}
	q.tokens--
	return true
}

// Refused is how many requests went over the quota.
func (q *Quota) Refused() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.refused
}
