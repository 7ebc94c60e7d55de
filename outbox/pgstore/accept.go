package pgstore

import (
	"context"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Accept writes sub, its deliveries and a submission.received event in one transaction.
//
// A submission whose (form, idempotency key) or whose id is already stored is a duplicate:
// nothing is written and the stored submission's id and status come back with Duplicate
// set. Matching on the id too makes a spool replay of an already stored submission a
// no-op. Concurrent Accepts with one key are safe: INSERT ... ON CONFLICT DO NOTHING waits
// for the first inserter to commit, then finds its row. Deliveries are stored as given,
// except that a missing id, status, next attempt time or creation time is filled in (new
// UUIDv7; pending, or skipped when sub is not accepted; sub's creation time); the caller's
// values are not modified.
func (s *Store) Accept(ctx context.Context, sub *outbox.Submission, deliveries []outbox.Delivery) (outbox.AcceptResult, error) {
	// A lone submission is a batch of one (accept_batch.go): one statement writes it, the
	// one every group commit that falls back to the pipeline runs, so there is one write
	// path to keep right.
	out := s.AcceptBatch(ctx, []outbox.AcceptItem{{Submission: sub, Deliveries: deliveries}})[0]
	return out.Result, out.Err
}
