package storetest

import (
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// RewindUnboundKey turns a database migrated to the present back into what a release
// before migration 0003_unbound_key wrote: every key in the unique column, no
// unbound_key column, version 3 not recorded. The statements are valid on both stores.
var RewindUnboundKey = []string{
	`UPDATE submissions SET idempotency_key = unbound_key WHERE unbound_key IS NOT NULL`,
	`ALTER TABLE submissions DROP COLUMN unbound_key`,
	`DELETE FROM form_outbox_migrations WHERE version = 3`,
}

// CheckUpgradeReleasesRefusedKeys stores a refused and an accepted keyed post through
// open's store, closes it, runs rewind (RewindUnboundKey on the raw database), then
// reopens: the migration must release the refused post's key (a corrected post with it
// is stored) and keep the accepted post's key bound (its retry is a duplicate), and the
// refused row must still show its key.
func CheckUpgradeReleasesRefusedKeys(t *testing.T, open func() outbox.Store, rewind func(stmts []string)) {
	t.Helper()
	s := open()
	refused := NewSubmission("contact", WithIdempotencyKey("kq"), WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation))
	accepted := NewSubmission("contact", WithIdempotencyKey("ka"))
	MustAccept(t, s, refused)
	MustAccept(t, s, accepted)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rewind(RewindUnboundKey)

	s = open()
	defer s.Close()
	ctx := testCtx(t)
	if got, err := s.GetSubmission(ctx, refused.ID); err != nil || got.IdempotencyKey != "kq" {
		t.Errorf("refused row after the upgrade: %+v, %v, want it with key kq", got, err)
	}
	corrected := NewSubmission("contact", WithIdempotencyKey("kq"), WithContentHash(hashOther))
	if res := MustAccept(t, s, corrected); res != (outbox.AcceptResult{ID: corrected.ID, Status: outbox.SubmissionAccepted}) {
		t.Errorf("corrected post with the refused post's key = %+v, want stored as %s", res, corrected.ID)
	}
	retry := NewSubmission("contact", WithIdempotencyKey("ka"))
	if res := MustAccept(t, s, retry); res != (outbox.AcceptResult{ID: accepted.ID, Status: outbox.SubmissionAccepted, Duplicate: true}) {
		t.Errorf("retry of the accepted post = %+v, want a duplicate of %s", res, accepted.ID)
	}
}
