package outbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// countingWaker counts the wake-ups an Acceptor sends.
type countingWaker struct{ n atomic.Int32 }

func (w *countingWaker) Broadcast(context.Context) { w.n.Add(1) }

// openFallback opens a spool in dir with a replayer that is never started, so only the
// test replays it.
func openFallback(t *testing.T, dir string) *spool.Fallback {
	t.Helper()
	s, err := spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatalf("open spool: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return &spool.Fallback{Spool: s, Replayer: &spool.Replayer{Spool: s}}
}

func contactSubmission() (*outbox.Submission, []outbox.Delivery) {
	sub := storetest.NewSubmission("contact", storetest.WithFields("message", "spooled hello"))
	return sub, []outbox.Delivery{storetest.NewDelivery(sub, "email", "team@example.com")}
}

// With the store down, the submission is fsynced to the spool and answered queued under
// its own id; the spooled record holds the submission, ready for replay.
func TestAcceptorSpoolsWhenTheStoreFails(t *testing.T) {
	s := storetest.OpenSQLite(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fb := openFallback(t, t.TempDir())
	waker := &countingWaker{}
	acc := &outbox.Acceptor{Store: s, Waker: waker}
	acc.SetSpool(fb)

	sub, ds := contactSubmission()
	got, err := acc.Accept(context.Background(), sub, ds)
	if err != nil || got.ID != sub.ID || got.Status != outbox.StatusQueued {
		t.Fatalf("accept with the store down: %+v, %v; want %s queued", got, err, sub.ID)
	}
	if n := fb.Waiting(); n != 1 {
		t.Fatalf("spool entries = %d, want 1", n)
	}
	if n := waker.n.Load(); n != 0 {
		t.Errorf("%d wake-ups for a submission the store does not have", n)
	}
	other := storetest.OpenSQLite(t)
	rep, err := fb.Spool.Replay(context.Background(), other, nil)
	if err != nil || rep.Stored != 1 {
		t.Fatalf("replay: %+v, %v", rep, err)
	}
	back, err := other.GetSubmission(context.Background(), sub.ID)
	if err != nil {
		t.Fatalf("replayed submission %s: %v", sub.ID, err)
	}
	if v, _ := back.Data.Get("message"); v != "spooled hello" {
		t.Errorf("replayed message = %q", v)
	}
}

// When neither the store nor the spool can keep the post, Accept returns an error (intake
// answers it 503) and claims no status.
func TestAcceptorErrsWhenNeitherStoreNorSpoolKeepsIt(t *testing.T) {
	s := storetest.OpenSQLite(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "spool")
	fb := openFallback(t, dir)
	// The spool's directory vanishes and a file takes its name: no segment can be created.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a dir"), 0o600); err != nil {
		t.Fatal(err)
	}
	acc := &outbox.Acceptor{Store: s}
	acc.SetSpool(fb)
	sub, ds := contactSubmission()
	got, err := acc.Accept(context.Background(), sub, ds)
	if err == nil || got.Status != "" {
		t.Fatalf("accept with store and spool broken: %+v, %v; want an error and no status", got, err)
	}
}

// Without a spool (off, or not opened yet), a store failure is the caller's error.
func TestAcceptorWithoutSpoolReturnsTheStoreError(t *testing.T) {
	s := storetest.OpenSQLite(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sub, ds := contactSubmission()
	if got, err := (&outbox.Acceptor{Store: s}).Accept(context.Background(), sub, ds); err == nil || got.Status == outbox.StatusQueued {
		t.Fatalf("accept with the store down and no spool: %+v, %v; want an error", got, err)
	}
}

// Write-ahead: the submission is in the spool before the store has it; a healthy store
// answers as usual and a replay finds the record already stored.
func TestAcceptorWriteAheadSpoolsFirst(t *testing.T) {
	s := storetest.OpenSQLite(t)
	fb := openFallback(t, t.TempDir())
	acc := &outbox.Acceptor{Store: s, WriteAhead: true}
	acc.SetSpool(fb)
	sub, ds := contactSubmission()
	got, err := acc.Accept(context.Background(), sub, ds)
	if err != nil || got.ID != sub.ID || got.Status != outbox.SubmissionAccepted {
		t.Fatalf("accept: %+v, %v; want %s accepted", got, err, sub.ID)
	}
	if n := fb.Waiting(); n != 1 {
		t.Fatalf("spool entries = %d, want 1 (written ahead)", n)
	}
	rep, err := fb.Spool.Replay(context.Background(), s, nil)
	if err != nil || rep.Stored != 0 || rep.Duplicates != 1 || rep.Remaining != 0 {
		t.Fatalf("replay: %+v, %v; want the one record found already stored", rep, err)
	}
}

// The worker is woken for a commit with pending deliveries, not for a duplicate or a
// submission whose deliveries are all skipped; OnStored hears every commit.
func TestAcceptorWakesTheWorkerOnlyForNewPendingWork(t *testing.T) {
	s := storetest.OpenSQLite(t)
	waker := &countingWaker{}
	var stored []outbox.AcceptResult
	acc := &outbox.Acceptor{Store: s, Waker: waker, OnStored: func(_ *outbox.Submission, r outbox.AcceptResult) {
		stored = append(stored, r)
	}}
	ctx := context.Background()
	sub, ds := contactSubmission()
	if _, err := acc.Accept(ctx, sub, ds); err != nil {
		t.Fatal(err)
	}
	if n := waker.n.Load(); n != 1 {
		t.Fatalf("wake-ups after a new submission = %d, want 1", n)
	}
	if got, err := acc.Accept(ctx, sub, ds); err != nil || !got.Duplicate {
		t.Fatalf("second accept of one id: %+v, %v; want a duplicate", got, err)
	}
	spam := storetest.NewSubmission("contact", storetest.WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot))
	skipped := storetest.NewDelivery(spam, "email", "team@example.com")
	skipped.Status = outbox.DeliverySkipped
	if _, err := acc.Accept(ctx, spam, []outbox.Delivery{skipped}); err != nil {
		t.Fatal(err)
	}
	if n := waker.n.Load(); n != 1 {
		t.Errorf("wake-ups = %d after a duplicate and a spam post, want still 1", n)
	}
	if len(stored) != 3 || stored[0].ID != sub.ID || !stored[1].Duplicate || stored[2].ID != spam.ID {
		t.Errorf("OnStored heard %+v, want the new post, its duplicate and the spam post", stored)
	}
}

// slowStore never answers an AcceptBatch (the Acceptor's group commit) until its context
// ends or the test is over, like a database holding a lock; it hands the deadline it was
// given to the test.
type slowStore struct {
	outbox.Store
	deadlines chan time.Time
	release   chan struct{}
}

func (s *slowStore) AcceptBatch(ctx context.Context, items []outbox.AcceptItem) []outbox.AcceptOutcome {
	d, _ := ctx.Deadline()
	s.deadlines <- d
	err := errors.New("released by the test")
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-s.release:
	}
	out := make([]outbox.AcceptOutcome, len(items))
	for i := range out {
		out[i].Err = err
	}
	return out
}

// A store that hangs is given up after the Acceptor's Timeout and the spool answers,
// while the shared transaction keeps its own, longer bound (GroupCommitter.Timeout): it is
// not cut short by one caller giving up on it.
func TestAcceptorGivesUpOnAHungStoreAfterItsTimeout(t *testing.T) {
	slow := &slowStore{Store: storetest.OpenSQLite(t), deadlines: make(chan time.Time, 1), release: make(chan struct{})}
	t.Cleanup(func() { close(slow.release) })
	fb := openFallback(t, t.TempDir())
	const groupTimeout = time.Hour
	acc := &outbox.Acceptor{Store: slow, Timeout: 50 * time.Millisecond, Group: outbox.GroupCommitter{Timeout: groupTimeout}}
	acc.SetSpool(fb)
	sub, ds := contactSubmission()
	start := time.Now()
	got, err := acc.Accept(context.Background(), sub, ds)
	if err != nil || got.Status != outbox.StatusQueued {
		t.Fatalf("accept against a hung store: %+v, %v; want queued", got, err)
	}
	if n := fb.Waiting(); n != 1 {
		t.Errorf("spool entries = %d, want the post", n)
	}
	select {
	case dl := <-slow.deadlines:
		if d := dl.Sub(start); d < groupTimeout-time.Minute || d > groupTimeout+time.Minute {
			t.Errorf("shared transaction deadline %v after the call, want the group's %v", d, groupTimeout)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the store was never asked to write the post")
	}
}

// A visitor who hangs up does not cancel the store write: the post is kept.
func TestAcceptorKeepsThePostWhenTheVisitorHangsUp(t *testing.T) {
	s := storetest.OpenSQLite(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sub, ds := contactSubmission()
	if _, err := (&outbox.Acceptor{Store: s}).Accept(ctx, sub, ds); err != nil {
		t.Fatalf("accept under a cancelled request: %v", err)
	}
	if _, err := s.GetSubmission(context.Background(), sub.ID); err != nil {
		t.Fatalf("submission %s not stored: %v", sub.ID, err)
	}
}

// fakeSpooler is a spool that already holds entries, to see the Acceptor wake its
// replayer once the store answers again.
type fakeSpooler struct {
	waiting int
	wakes   int
	err     error
}

func (f *fakeSpooler) Append(*outbox.Submission, []outbox.Delivery) (outbox.AcceptResult, error) {
	return outbox.AcceptResult{}, f.err
}
func (f *fakeSpooler) Holds(*outbox.Submission) bool { return false }
func (f *fakeSpooler) Waiting() int                  { return f.waiting }
func (f *fakeSpooler) Wake()                         { f.wakes++ }

// A commit while the spool holds entries wakes the replayer: the store is back.
func TestAcceptorDrainsTheSpoolOnceTheStoreAnswers(t *testing.T) {
	acc := &outbox.Acceptor{Store: storetest.OpenSQLite(t)}
	fs := &fakeSpooler{waiting: 3, err: errors.New("unused")}
	acc.SetSpool(fs)
	sub, ds := contactSubmission()
	if _, err := acc.Accept(context.Background(), sub, ds); err != nil {
		t.Fatal(err)
	}
	if fs.wakes != 1 {
		t.Errorf("replayer wake-ups = %d, want 1", fs.wakes)
	}
}

// Retries of a keyed post during an outage are answered with the spooled post's id as
// duplicates, and so is one that comes after the store is back but before the replayer
// stored that post: the store must not bind the key to the retry. After replay the one
// row is the id every answer named.
func TestAcceptorAnswersAKeyTheSpoolHoldsWithItsID(t *testing.T) {
	down := storetest.OpenSQLite(t)
	if err := down.Close(); err != nil {
		t.Fatal(err)
	}
	fb := openFallback(t, t.TempDir())
	keyed := func() (*outbox.Submission, []outbox.Delivery) {
		sub := storetest.NewSubmission("contact", storetest.WithIdempotencyKey("K"))
		return sub, []outbox.Delivery{storetest.NewDelivery(sub, "email", "team@example.com")}
	}
	ctx := context.Background()
	post := func(acc *outbox.Acceptor) (outbox.AcceptResult, error) {
		sub, ds := keyed()
		return acc.Accept(ctx, sub, ds)
	}
	outage := &outbox.Acceptor{Store: down}
	outage.SetSpool(fb)
	sub, ds := keyed()
	first, err := outage.Accept(ctx, sub, ds)
	if err != nil || first.ID != sub.ID || first.Status != outbox.StatusQueued || first.Duplicate {
		t.Fatalf("first post: %+v, %v", first, err)
	}
	want := outbox.AcceptResult{ID: first.ID, Status: outbox.StatusQueued, Duplicate: true}
	if got, err := post(outage); err != nil || got != want {
		t.Fatalf("retry during the outage: %+v, %v, want %+v", got, err, want)
	}

	up := storetest.OpenSQLite(t)
	back := &outbox.Acceptor{Store: up}
	back.SetSpool(fb)
	if got, err := post(back); err != nil || got != want {
		t.Fatalf("retry once the store is back, before replay: %+v, %v, want %+v", got, err, want)
	}
	if n := fb.Waiting(); n != 1 {
		t.Fatalf("spooled entries = %d, want 1", n)
	}
	if _, err := fb.Spool.Replay(ctx, up, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := up.GetSubmission(ctx, first.ID); err != nil {
		t.Fatalf("answered id %s not stored: %v", first.ID, err)
	}
	got, err := post(back)
	if err != nil || got.ID != first.ID || got.Status != outbox.SubmissionAccepted || !got.Duplicate {
		t.Fatalf("retry after replay: %+v, %v, want the stored %s", got, err, first.ID)
	}
}
