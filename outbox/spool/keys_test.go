package spool

import (
	"context"
	"sync"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// mustSpool spools e through Accept, the path a post takes while the store is down.
func mustSpool(t *testing.T, s *Spool, e Entry) outbox.AcceptResult {
	t.Helper()
	res, err := s.Accept(e)
	if err != nil {
		t.Fatalf("spool %s: %v", e.Submission.ID, err)
	}
	return res
}

// A retry of a post the spool holds is answered with the held id as a duplicate, as the
// store answers it: on the spool that took the post, after a restart (the index is read
// back from the segments), and never by spooling it again. Once replayed, the held id is
// the row stored.
func TestSpoolAnswersAKeyItHoldsWithTheHeldID(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, Options{})
	first := newEntry("K")
	if got := mustSpool(t, s, first); got != (outbox.AcceptResult{ID: first.Submission.ID, Status: outbox.StatusQueued}) {
		t.Fatalf("first post: %+v, want its own id queued", got)
	}
	want := outbox.AcceptResult{ID: first.Submission.ID, Status: outbox.StatusQueued, Duplicate: true}
	if got := mustSpool(t, s, newEntry("K")); got != want {
		t.Fatalf("retry: %+v, want %+v", got, want)
	}
	if !s.Holds(&first.Submission) {
		t.Errorf("Holds = false for the spooled key")
	}
	s.Close()

	s = openSpool(t, dir, Options{})
	if got := mustSpool(t, s, newEntry("K")); got != want {
		t.Fatalf("retry after a restart: %+v, want %+v", got, want)
	}
	if n := s.Stats().Entries; n != 1 {
		t.Fatalf("spooled entries = %d, want 1", n)
	}
	store := storetest.OpenSQLite(t)
	if rep, err := s.Replay(context.Background(), store, nil); err != nil || rep.Stored != 1 {
		t.Fatalf("replay: %+v, %v", rep, err)
	}
	if _, err := store.GetSubmission(context.Background(), first.Submission.ID); err != nil {
		t.Fatalf("answered id %s not stored: %v", first.Submission.ID, err)
	}
	if n := receivedEvents(t, store); n != 1 {
		t.Errorf("%d submissions stored, want 1", n)
	}
	if s.Holds(&first.Submission) {
		t.Errorf("Holds = true after the key's post was replayed")
	}
}

// Concurrent posts with one key on one spool: one entry is spooled and every answer
// carries its id; exactly one answer is not a duplicate.
func TestSpoolRaceOnOneKeySpoolsOnce(t *testing.T) {
	s := openSpool(t, t.TempDir(), Options{})
	const n = 8
	answers := make([]outbox.AcceptResult, n)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = mustSpool(t, s, newEntry("K"))
		}()
	}
	wg.Wait()
	if got := s.Stats().Entries; got != 1 {
		t.Fatalf("spooled entries = %d, want 1", got)
	}
	fresh := 0
	for _, a := range answers {
		if a.ID != answers[0].ID || a.Status != outbox.StatusQueued {
			t.Fatalf("answers %+v: not all the one spooled id", answers)
		}
		if !a.Duplicate {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d answers not duplicates, want 1: %+v", fresh, answers)
	}
}

// A key reused with other content while only the spool holds it is judged as the store
// judges it: the new content is spooled quarantined/idempotency_key_reused with its
// deliveries skipped and answered KeyReused under its own id; replay stores both.
func TestSpoolJudgesAReusedKeyAsTheStore(t *testing.T) {
	s := openSpool(t, t.TempDir(), Options{})
	first, reused := newEntry("K"), newEntry("K")
	reused.Submission.ContentHash = "sha256:other content"
	mustSpool(t, s, first)
	got := mustSpool(t, s, reused)
	if got != (outbox.AcceptResult{ID: reused.Submission.ID, Status: outbox.SubmissionQuarantined, KeyReused: true}) {
		t.Fatalf("reused key: %+v, want its own id quarantined with KeyReused", got)
	}
	if got := mustSpool(t, s, newEntry("K")); got.ID != first.Submission.ID || !got.Duplicate {
		t.Fatalf("retry of the first content after the reuse: %+v, want %s", got, first.Submission.ID)
	}
	store := storetest.OpenSQLite(t)
	if rep, err := s.Replay(context.Background(), store, nil); err != nil || rep.Stored != 2 {
		t.Fatalf("replay: %+v, %v, want 2 stored", rep, err)
	}
	ctx := context.Background()
	if f, err := store.GetSubmission(ctx, first.Submission.ID); err != nil || f.Status != outbox.SubmissionAccepted {
		t.Fatalf("first post: %+v, %v, want accepted", f, err)
	}
	q, err := store.GetSubmission(ctx, reused.Submission.ID)
	if err != nil || q.Status != outbox.SubmissionQuarantined || q.Reason != outbox.ReasonIdempotencyKeyReused {
		t.Fatalf("reused post: %+v, %v, want quarantined/%s", q, err, outbox.ReasonIdempotencyKeyReused)
	}
	ds, err := store.ListDeliveries(ctx, reused.Submission.ID)
	if err != nil || len(ds) != 2 || ds[0].Status != outbox.DeliverySkipped || ds[1].Status != outbox.DeliverySkipped {
		t.Errorf("reused post's deliveries: %+v, %v, want both skipped", ds, err)
	}
}
