package spool

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The spool's idempotency keys. While the store is down the spool is where a post's key
// is bound, so the spool answers a retry as the store would (outbox/idempotency.go): a
// post whose (form, key) a spooled entry binds gets the held id as a duplicate, and one
// with other content is spooled quarantined/idempotency_key_reused. Without this, every
// retry of a keyed post during an outage was spooled under an id of its own and answered
// queued, and replay then stored only the first: the client held ids that never came to
// exist. The index lives in memory, is rebuilt from the segments by Open (so it survives
// a restart while the store is still down) and forgets a key when the segment holding
// it is drained, since from then on the store answers for it.

// keyRef is an idempotency key within its form, as the stores' UNIQUE (form,
// idempotency_key) scopes it.
type keyRef struct{ form, key string }

// heldKey is the spooled submission that binds a key.
type heldKey struct {
	id   uuid.UUID
	hash string // its content hash: the same hash is a retry, another is a reused key
	seq  uint64 // the segment holding it
	// done is open while the entry's Append is in flight: a racing post with the key
	// waits on it, then looks again (the Append may have failed and freed the key).
	done chan struct{}
}

// bindingKey reports the key sub would bind in a store (outbox.BindsIdempotencyKey).
func bindingKey(sub *outbox.Submission) (keyRef, bool) {
	if sub.IdempotencyKey == "" || !outbox.BindsIdempotencyKey(sub.Status) {
		return keyRef{}, false
	}
	return keyRef{sub.Form, sub.IdempotencyKey}, true
}

// Accept spools e as the store would accept it, judging its idempotency key against the
// entries the spool holds (see above): a retry of a held post is answered with the held
// id, Status outbox.StatusQueued and Duplicate, and appends nothing; other content under
// a held key is appended quarantined/idempotency_key_reused with its deliveries skipped
// and answered with its own id, SubmissionQuarantined and KeyReused; anything else is
// appended and answered with its own id and StatusQueued. Two concurrent Accepts with
// one key append one entry. An error means nothing was appended.
func (s *Spool) Accept(e Entry) (outbox.AcceptResult, error) {
	sub := &e.Submission
	ref, binds := bindingKey(sub)
	if !binds {
		return outbox.AcceptResult{ID: sub.ID, Status: outbox.StatusQueued}, s.append(e, nil)
	}
	for {
		s.mu.Lock()
		held := s.keys[ref]
		if held == nil {
			mine := &heldKey{id: sub.ID, hash: sub.ContentHash, done: make(chan struct{})}
			s.keys[ref] = mine
			s.mu.Unlock()
			return outbox.AcceptResult{ID: sub.ID, Status: outbox.StatusQueued}, s.append(e, mine)
		}
		wait := held.done
		s.mu.Unlock()
		if wait != nil {
			<-wait
			continue
		}
		dup := outbox.DuplicateResult(sub, held.id, outbox.StatusQueued, held.hash)
		if !dup.KeyReused {
			return dup, nil
		}
		q, skipped := outbox.KeyReusedCopy(sub, e.Deliveries)
		if err := s.append(Entry{Submission: *q, Deliveries: skipped}, nil); err != nil {
			return outbox.AcceptResult{}, fmt.Errorf("spool reused key: %w", err)
		}
		return outbox.AcceptResult{ID: sub.ID, Status: outbox.SubmissionQuarantined, KeyReused: true}, nil
	}
}

// Holds reports whether a spooled entry binds sub's idempotency key (or is being
// appended with it). outbox.Acceptor asks before going to the store: the store does not
// know that key until replay, and would bind it to this post.
func (s *Spool) Holds(sub *outbox.Submission) bool {
	ref, binds := bindingKey(sub)
	if !binds {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[ref] != nil
}

// holdLocked records that segment seq now holds e's key. reserved is the key Accept
// reserved for e (nil for a plain Append: the oldest entry with a key keeps it, as
// replay stores the oldest first).
func (s *Spool) holdLocked(e *Entry, seq uint64, reserved *heldKey) {
	if reserved != nil {
		reserved.seq = seq
		close(reserved.done)
		reserved.done = nil
		return
	}
	ref, binds := bindingKey(&e.Submission)
	if binds && s.keys[ref] == nil {
		s.keys[ref] = &heldKey{id: e.Submission.ID, hash: e.Submission.ContentHash, seq: seq}
	}
}

// releaseLocked frees a key Accept reserved for an entry whose Append failed, waking
// the posts waiting on it.
func (s *Spool) releaseLocked(e *Entry, reserved *heldKey) {
	if reserved == nil {
		return
	}
	if ref, _ := bindingKey(&e.Submission); s.keys[ref] == reserved {
		delete(s.keys, ref)
	}
	close(reserved.done)
	reserved.done = nil
}

// forgetLocked drops the keys held by drained segment seq.
func (s *Spool) forgetLocked(seq uint64) {
	for ref, h := range s.keys {
		if h.done == nil && h.seq == seq {
			delete(s.keys, ref)
		}
	}
}
