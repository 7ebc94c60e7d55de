package storetest

import (
	"context"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Content hashes of two different posts: a retry of a post repeats its hash.
const (
	hashFirst  = "sha256:first"
	hashOther  = "sha256:other"
	keyedEmail = "sales@example.com"
)

// A refused post (any quarantine) keeps its key for audit but does not bind it: the
// visitor's next post with that key, corrected (a fixed 422) or the same (a 429 retried
// after Retry-After), is stored afresh and its deliveries are due.
var _ = register("AcceptRefusedPostDoesNotBindItsKey", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	for _, tc := range []struct{ reason, retryHash string }{
		{outbox.ReasonSchemaViolation, hashOther}, // corrected content
		{outbox.ReasonRateLimited, hashFirst},     // the same content, later
		{outbox.ReasonOriginRejected, hashFirst},
		{outbox.ReasonCaptchaUnavailable, hashFirst},
	} {
		key := "k-" + tc.reason
		refused := NewSubmission("contact", WithIdempotencyKey(key), WithContentHash(hashFirst),
			WithStatus(outbox.SubmissionQuarantined, tc.reason))
		if res := MustAccept(t, s, refused, NewDelivery(refused, "email", keyedEmail)); res.Duplicate || res.ID != refused.ID {
			t.Fatalf("%s: refused post = %+v, want stored as %s", tc.reason, res, refused.ID)
		}

		retry := NewSubmission("contact", WithIdempotencyKey(key), WithContentHash(tc.retryHash))
		d := NewDelivery(retry, "email", keyedEmail)
		res := MustAccept(t, s, retry, d)
		if res != (outbox.AcceptResult{ID: retry.ID, Status: outbox.SubmissionAccepted}) {
			t.Fatalf("%s: retry with the same key = %+v, want stored as %s accepted", tc.reason, res, retry.ID)
		}
		if got, err := s.GetDelivery(ctx, d.ID); err != nil || got.Status != outbox.DeliveryPending {
			t.Errorf("%s: retry's delivery = %+v, %v, want pending", tc.reason, got, err)
		}
		old, err := s.GetSubmission(ctx, refused.ID)
		if err != nil || old.Status != outbox.SubmissionQuarantined || old.Reason != tc.reason || old.IdempotencyKey != key {
			t.Errorf("%s: refused row now %+v, %v, want it kept quarantined with its key", tc.reason, old, err)
		}

		// The accepted retry bound the key: repeating it writes nothing.
		again := NewSubmission("contact", WithIdempotencyKey(key), WithContentHash(tc.retryHash))
		if res := MustAccept(t, s, again, NewDelivery(again, "email", keyedEmail)); res != (outbox.AcceptResult{ID: retry.ID, Status: outbox.SubmissionAccepted, Duplicate: true}) {
			t.Errorf("%s: repeat of the accepted retry = %+v, want a duplicate of %s", tc.reason, res, retry.ID)
		}
	}
})

// Spam binds its key like an accepted post: a bot's retry is answered as before and
// stores nothing.
var _ = register("AcceptSpamBindsItsKey", func(t *testing.T, s outbox.Store) {
	spam := NewSubmission("contact", WithIdempotencyKey("k"), WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
	MustAccept(t, s, spam)
	again := NewSubmission("contact", WithIdempotencyKey("k"), WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
	if res := MustAccept(t, s, again); res != (outbox.AcceptResult{ID: spam.ID, Status: outbox.SubmissionSpam, Duplicate: true}) {
		t.Errorf("repeat of a spam post = %+v, want a duplicate of %s", res, spam.ID)
	}
})

// The same key with other content after an accepted post: the new content is stored as
// quarantined/idempotency_key_reused (not sent), the answer says so, and the key stays
// the first post's. Through both entry points the handler and the spool replay use.
var _ = register("AcceptReusedKeyStoresOtherContentQuarantined", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	g := &outbox.GroupCommitter{}
	for name, accept := range map[string]func(*outbox.Submission, []outbox.Delivery) (outbox.AcceptResult, error){
		"outbox.Accept": func(sub *outbox.Submission, ds []outbox.Delivery) (outbox.AcceptResult, error) {
			return outbox.Accept(ctx, s, sub, ds)
		},
		"GroupCommitter.Accept": func(sub *outbox.Submission, ds []outbox.Delivery) (outbox.AcceptResult, error) {
			return g.Accept(ctx, s, sub, ds)
		},
	} {
		key := "k-" + name
		first := NewSubmission("contact", WithIdempotencyKey(key), WithContentHash(hashFirst))
		MustAccept(t, s, first, NewDelivery(first, "email", keyedEmail))

		other := NewSubmission("contact", WithIdempotencyKey(key), WithContentHash(hashOther), WithFields("message", "a new question"))
		d := NewDelivery(other, "email", keyedEmail)
		res, err := accept(other, []outbox.Delivery{d})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res != (outbox.AcceptResult{ID: other.ID, Status: outbox.SubmissionQuarantined, KeyReused: true}) {
			t.Fatalf("%s: other content with the key = %+v, want stored as %s quarantined, key reused", name, res, other.ID)
		}
		got, err := s.GetSubmission(ctx, other.ID)
		if err != nil || got.Status != outbox.SubmissionQuarantined || got.Reason != outbox.ReasonIdempotencyKeyReused ||
			got.IdempotencyKey != key || got.Data[0].Value != "a new question" {
			t.Errorf("%s: stored %+v, %v, want the new content quarantined/%s with its key", name, got, err, outbox.ReasonIdempotencyKeyReused)
		}
		if gd, err := s.GetDelivery(ctx, d.ID); err != nil || gd.Status != outbox.DeliverySkipped {
			t.Errorf("%s: its delivery = %+v, %v, want skipped", name, gd, err)
		}
		if other.Status != outbox.SubmissionAccepted || d.Status != outbox.DeliveryPending {
			t.Errorf("%s: the caller's submission or delivery was modified", name)
		}

		// The key is still the first post's.
		retry := NewSubmission("contact", WithIdempotencyKey(key), WithContentHash(hashFirst))
		if res, err := accept(retry, nil); err != nil || res != (outbox.AcceptResult{ID: first.ID, Status: outbox.SubmissionAccepted, Duplicate: true}) {
			t.Errorf("%s: retry of the first post = %+v, %v, want a duplicate of %s", name, res, err, first.ID)
		}
	}
})

// In one shared transaction, a later item with an earlier item's key is told whether it
// repeats that item's content (a duplicate) or not (a reused key), as Accept would.
var _ = register("AcceptBatchTellsRetryFromReusedKey", func(t *testing.T, s outbox.Store) {
	first := NewSubmission("contact", WithIdempotencyKey("k"), WithContentHash(hashFirst))
	other := NewSubmission("contact", WithIdempotencyKey("k"), WithContentHash(hashOther))
	retry := NewSubmission("contact", WithIdempotencyKey("k"), WithContentHash(hashFirst))
	loose := NewSubmission("contact")
	out := s.AcceptBatch(context.Background(), []outbox.AcceptItem{{Submission: first}, {Submission: other}, {Submission: retry}, {Submission: loose}})
	want := []outbox.AcceptResult{
		{ID: first.ID, Status: outbox.SubmissionAccepted},
		{ID: first.ID, Status: outbox.SubmissionAccepted, Duplicate: true, KeyReused: true},
		{ID: first.ID, Status: outbox.SubmissionAccepted, Duplicate: true},
		{ID: loose.ID, Status: outbox.SubmissionAccepted},
	}
	for i := range want {
		if out[i].Err != nil || out[i].Result != want[i] {
			t.Errorf("item %d = %+v, want %+v", i, out[i], want[i])
		}
	}
})
