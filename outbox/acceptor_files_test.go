package outbox_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// deadlineStore records the deadline of each AcceptBatch.
type deadlineStore struct {
	outbox.Store
	batches chan time.Time
}

func (s *deadlineStore) AcceptBatch(ctx context.Context, items []outbox.AcceptItem) []outbox.AcceptOutcome {
	d, _ := ctx.Deadline()
	s.batches <- d
	return s.Store.AcceptBatch(ctx, items)
}

// A submission with files is written in a transaction of its own (outbox.AcceptOne
// under the Acceptor's deadline, not a shared group commit under the group's), and that
// deadline grows with its files' size (FileAllowance), so a large upload is not spooled
// for the time its bytes take to write.
func TestAcceptorGivesFilesTheirOwnTransactionAndTime(t *testing.T) {
	st := &deadlineStore{Store: storetest.OpenSQLite(t), batches: make(chan time.Time, 2)}
	const groupTimeout = time.Hour
	acc := &outbox.Acceptor{Store: st, Timeout: time.Second, Group: outbox.GroupCommitter{Timeout: groupTimeout}}
	sub, ds := contactSubmission()
	content := bytes.Repeat([]byte("%PDF"), 2*outbox.FileWriteRate) // 8 x FileWriteRate bytes: 8 s more
	sub.Files = []outbox.File{storetest.NewFile(sub, "cv", "cv.pdf", content)}
	start := time.Now()
	got, err := acc.Accept(context.Background(), sub, ds)
	if err != nil || got.Status != outbox.SubmissionAccepted {
		t.Fatalf("accept: %+v, %v", got, err)
	}
	if d := (<-st.batches).Sub(start); d < 8*time.Second || d > 10*time.Second {
		t.Errorf("deadline %v after the call, want the 1 s timeout plus 8 s for the file (not the group's hour)", d)
	}
	if files, _ := st.SubmissionFiles(context.Background(), sub.ID); len(files) != 1 {
		t.Errorf("stored files: %d", len(files))
	}

	// Without files: the group commit, under the group's deadline.
	plain, pds := contactSubmission()
	start = time.Now()
	if _, err := acc.Accept(context.Background(), plain, pds); err != nil {
		t.Fatal(err)
	}
	if d := (<-st.batches).Sub(start); d < groupTimeout-time.Minute {
		t.Errorf("a submission without files: deadline %v, want the group's %v", d, groupTimeout)
	}
}
