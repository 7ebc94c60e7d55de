package outbox_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// deadlineStore records the deadline of each single Accept and each AcceptBatch.
type deadlineStore struct {
	outbox.Store
	accepts, batches chan time.Time
}

func (s *deadlineStore) Accept(ctx context.Context, sub *outbox.Submission, ds []outbox.Delivery) (outbox.AcceptResult, error) {
	d, _ := ctx.Deadline()
	s.accepts <- d
	return s.Store.Accept(ctx, sub, ds)
}

func (s *deadlineStore) AcceptBatch(ctx context.Context, items []outbox.AcceptItem) []outbox.AcceptOutcome {
	d, _ := ctx.Deadline()
	s.batches <- d
	return s.Store.AcceptBatch(ctx, items)
}

// A submission with files is written in a transaction of its own (Store.Accept, not a
// shared group commit), and its deadline grows with its files' size (FileAllowance), so
// a large upload is not spooled for the time its bytes take to write.
func TestAcceptorGivesFilesTheirOwnTransactionAndTime(t *testing.T) {
	st := &deadlineStore{Store: storetest.OpenSQLite(t), accepts: make(chan time.Time, 1), batches: make(chan time.Time, 1)}
	acc := &outbox.Acceptor{Store: st, Timeout: time.Second}
	sub, ds := contactSubmission()
	content := bytes.Repeat([]byte("%PDF"), 2*outbox.FileWriteRate) // 8 x FileWriteRate bytes: 8 s more
	sub.Files = []outbox.File{storetest.NewFile(sub, "cv", "cv.pdf", content)}
	start := time.Now()
	got, err := acc.Accept(context.Background(), sub, ds)
	if err != nil || got.Status != outbox.SubmissionAccepted {
		t.Fatalf("accept: %+v, %v", got, err)
	}
	select {
	case dl := <-st.accepts:
		if d := dl.Sub(start); d < 8*time.Second || d > 9*time.Second+time.Second {
			t.Errorf("deadline %v after the call, want the 1 s timeout plus 8 s for the file", d)
		}
	default:
		t.Fatalf("the submission with a file did not go through Store.Accept")
	}
	if len(st.batches) != 0 {
		t.Error("the submission with a file went into a shared transaction")
	}
	if files, _ := st.SubmissionFiles(context.Background(), sub.ID); len(files) != 1 {
		t.Errorf("stored files: %d", len(files))
	}

	// Without files: the group commit and the plain timeout.
	plain, pds := contactSubmission()
	if _, err := acc.Accept(context.Background(), plain, pds); err != nil {
		t.Fatal(err)
	}
	if len(st.accepts) != 0 || len(st.batches) != 1 {
		t.Errorf("a submission without files: %d single accepts, %d batches; want the batch", len(st.accepts), len(st.batches))
	}
}
