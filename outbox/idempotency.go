package outbox

import (
	"context"

	"github.com/google/uuid"
)

// ReasonIdempotencyKeyReused quarantines a post whose idempotency key is already bound
// to a stored submission with other content: the client reused the key for a new
// message (the IETF Idempotency-Key draft answers this with 422). The post is kept, so
// nothing the visitor typed is lost, but it is neither sent nor allowed to take the key.
const ReasonIdempotencyKeyReused = "idempotency_key_reused"

// BindsIdempotencyKey reports whether a submission stored with status binds its
// idempotency key, so that a later post with the key is its duplicate. Only accepted and
// spam submissions do: a refusal (a 422 schema violation, a 429 rate limit, any
// quarantine) must leave the key free for the visitor's corrected or delayed retry,
// which is processed afresh. A refused row still keeps its key for audit (the stores
// keep it in a column without the unique constraint). The binding is decided once, when
// the row is inserted; a later release does not bind the key.
func BindsIdempotencyKey(status SubmissionStatus) bool {
	return status == SubmissionAccepted || status == SubmissionSpam
}

// DuplicateResult is the answer to a post whose insert was skipped because sub's id or
// its bound (form, idempotency key) was already stored as id with status and content
// hash hash. A key match whose content differs from sub's is a reused key, not a retry.
func DuplicateResult(sub *Submission, id uuid.UUID, status SubmissionStatus, hash string) AcceptResult {
	return AcceptResult{ID: id, Status: status, Duplicate: true,
		KeyReused: id != sub.ID && hash != sub.ContentHash}
}

// acceptFunc is AcceptOne's shape, shared by a store and a GroupCommitter.
type acceptFunc func(ctx context.Context, sub *Submission, deliveries []Delivery) (AcceptResult, error)

// Accept is AcceptOne plus what a reused idempotency key needs (see acceptKeyed). The
// handler (through GroupCommitter.Accept) and the spool replay both store through it, so
// a post and its replay are judged alike.
func Accept(ctx context.Context, s Store, sub *Submission, deliveries []Delivery) (AcceptResult, error) {
	return acceptKeyed(ctx, func(ctx context.Context, sub *Submission, deliveries []Delivery) (AcceptResult, error) {
		return AcceptOne(ctx, s, sub, deliveries)
	}, sub, deliveries)
}

// acceptKeyed accepts sub; if its key turned out to be bound to other content, it
// stores sub again as quarantined/idempotency_key_reused (KeyReusedCopy):
// such a row does not bind the key, so the second insert cannot collide on it, and the
// answer (KeyReused, the new row's id and status) tells the truth about what was
// stored. The caller's sub and deliveries are not modified.
func acceptKeyed(ctx context.Context, accept acceptFunc, sub *Submission, deliveries []Delivery) (AcceptResult, error) {
	res, err := accept(ctx, sub, deliveries)
	if err != nil || !res.KeyReused {
		return res, err
	}
	q, skipped := KeyReusedCopy(sub, deliveries)
	again, err := accept(ctx, q, skipped)
	if err != nil {
		return again, err
	}
	again.KeyReused = true
	return again, nil
}

// KeyReusedCopy is sub as it is stored when its idempotency key is bound to other
// content: quarantined/idempotency_key_reused, with its deliveries skipped. Such a row
// does not bind the key. The spool stores a reused key this way too
// (outbox/spool/keys.go). sub and deliveries are not modified.
func KeyReusedCopy(sub *Submission, deliveries []Delivery) (*Submission, []Delivery) {
	q := *sub
	q.Status, q.Reason = SubmissionQuarantined, ReasonIdempotencyKeyReused
	skipped := make([]Delivery, len(deliveries))
	for i, d := range deliveries {
		d.Status = DeliverySkipped
		skipped[i] = d
	}
	return &q, skipped
}
