package sqlitestore_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// commitGate holds the store's first shared transaction at its COMMIT until released, so
// the writes started meanwhile queue behind it, and records how many writes each
// transaction held.
type commitGate struct {
	queued  chan struct{} // one per write that joined the queue
	held    chan struct{} // closed once the first commit is held
	release chan struct{}
	fail    func(n int) error // for the commits after the first; nil: none fails

	releaseOnce func() // lets the first commit go

	mu      sync.Mutex
	commits []int
}

func holdFirstCommit(t *testing.T, s *sqlitestore.Store) *commitGate {
	t.Helper()
	// No time bound: how the writes group must not depend on the machine's speed.
	sqlitestore.SetWriteLimits(s, 0, time.Hour)
	g := &commitGate{queued: make(chan struct{}, 1024), held: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	sqlitestore.SetWriteHooks(s, func() { g.queued <- struct{}{} }, func(n int) error {
		g.mu.Lock()
		g.commits = append(g.commits, n)
		first := len(g.commits) == 1
		g.mu.Unlock()
		if first {
			close(g.held)
			<-g.release
			return nil
		}
		if g.fail != nil {
			return g.fail(n)
		}
		return nil
	})
	t.Cleanup(func() {
		once.Do(func() { close(g.release) })
		sqlitestore.SetWriteHooks(s, nil, nil)
	})
	g.releaseOnce = func() { once.Do(func() { close(g.release) }) }
	return g
}

// start runs write on its own goroutine and returns its result channel, once the write
// has joined the queue.
func (g *commitGate) start(write func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- write() }()
	<-g.queued
	return done
}

// holdWith starts first (the write whose commit is held) and waits until it is held.
func (g *commitGate) holdWith(write func() error) <-chan error {
	done := g.start(write)
	<-g.held
	return done
}

// holdFirstAccept holds s's next write, an accept, at its commit (holdFirstCommit), and
// returns the gate and the accept's result.
func holdFirstAccept(t *testing.T, s *sqlitestore.Store) (*commitGate, <-chan error) {
	t.Helper()
	g := holdFirstCommit(t, s)
	return g, g.holdWith(acceptWrite(s, context.Background(), storetest.NewSubmission("contact")))
}

// newHeldStore opens a store with its first write held (holdFirstAccept).
func newHeldStore(t *testing.T) (*sqlitestore.Store, *commitGate, <-chan error) {
	t.Helper()
	s := newSQLite(t)
	g, firstDone := holdFirstAccept(t, s)
	return s, g, firstDone
}

// newSubs makes n submissions of the contact form.
func newSubs(n int) []*outbox.Submission {
	subs := make([]*outbox.Submission, n)
	for i := range subs {
		subs[i] = storetest.NewSubmission("contact")
	}
	return subs
}

// wantOneCommitEach queues n accepts behind the held commit, lets it go, and checks
// that each accept had a commit of its own.
func wantOneCommitEach(t *testing.T, s *sqlitestore.Store, g *commitGate, firstDone <-chan error, n int) {
	t.Helper()
	subs := newSubs(n)
	dones := []<-chan error{firstDone}
	want := []int{1}
	for _, sub := range subs {
		dones = append(dones, g.start(acceptWrite(s, context.Background(), sub)))
		want = append(want, 1)
	}
	g.releaseOnce()
	wantOK(t, "write", dones...)
	wantCommits(t, g, want...)
	mustHave(t, s, subs...)
}

func (g *commitGate) commitSizes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.commits)
}

func newSQLite(t *testing.T) *sqlitestore.Store {
	t.Helper()
	return storetest.OpenSQLiteAt(t, filepath.Join(t.TempDir(), "outbox.db"))
}

func acceptWrite(s *sqlitestore.Store, ctx context.Context, sub *outbox.Submission) func() error {
	return func() error {
		_, err := outbox.AcceptOne(ctx, s, sub, []outbox.Delivery{storetest.NewDelivery(sub, "email", "sales@example.com")})
		return err
	}
}

func mustHave(t *testing.T, s outbox.Store, subs ...*outbox.Submission) {
	t.Helper()
	for _, sub := range subs {
		if _, err := s.GetSubmission(context.Background(), sub.ID); err != nil {
			t.Errorf("submission %s: %v, want stored", sub.ID, err)
		}
	}
}

func mustNotHave(t *testing.T, s outbox.Store, subs ...*outbox.Submission) {
	t.Helper()
	for _, sub := range subs {
		if _, err := s.GetSubmission(context.Background(), sub.ID); !errors.Is(err, outbox.ErrNotFound) {
			t.Errorf("submission %s: err = %v, want ErrNotFound", sub.ID, err)
		}
	}
}

// wantOK waits for every write of dones and fails t on each error.
func wantOK(t *testing.T, what string, dones ...<-chan error) {
	t.Helper()
	for i, done := range dones {
		if err := <-done; err != nil {
			t.Errorf("%s (%d): %v", what, i, err)
		}
	}
}

func wantCommits(t *testing.T, g *commitGate, want ...int) {
	t.Helper()
	if got := g.commitSizes(); !slices.Equal(got, want) {
		t.Errorf("writes per commit = %v, want %v", got, want)
	}
}

// The writes that wait together (accepts, a claim, a batch of completions, a renewal)
// share one commit, and each does what it would have done alone.
func TestWritesWaitingTogetherShareOneCommit(t *testing.T) {
	ctx := context.Background()
	s := newSQLite(t)
	old := storetest.NewSubmission("contact", storetest.WithCreatedAt(time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)))
	due := []outbox.Delivery{
		storetest.NewDelivery(old, "a", "a@example.com"),
		storetest.NewDelivery(old, "b", "b@example.com"),
		storetest.NewDelivery(old, "c", "c@example.com"),
	}
	storetest.MustAccept(t, s, old, due...)
	now := time.Now()
	leased, err := s.Claim(ctx, outbox.ClaimParams{Owner: "w", Limit: 2, Lease: time.Minute, Now: now})
	if err != nil || len(leased) != 2 {
		t.Fatalf("claim = %d rows (err %v), want 2", len(leased), err)
	}

	g, firstDone := holdFirstAccept(t, s)

	var subs []*outbox.Submission
	var dones []<-chan error
	for range 8 {
		sub := storetest.NewSubmission("contact")
		subs = append(subs, sub)
		dones = append(dones, g.start(acceptWrite(s, ctx, sub)))
	}
	var claimed []outbox.Delivery
	dones = append(dones, g.start(func() error {
		var err error
		claimed, err = s.Claim(ctx, outbox.ClaimParams{Owner: "w", Limit: 1, Lease: time.Minute, Now: now})
		return err
	}))
	dones = append(dones, g.start(func() error {
		return outbox.CompleteOne(ctx, s, outbox.Completion{
			DeliveryID: leased[0].ID, LeaseToken: leased[0].LeaseToken, Status: outbox.DeliverySent, Provider: "fake",
			Attempt: outbox.Attempt{Provider: "fake", StartedAt: now, FinishedAt: now, Outcome: outbox.OutcomeSent}, Now: now,
		})
	}))
	renewTo := now.Add(time.Hour).UTC().Truncate(time.Microsecond)
	dones = append(dones, g.start(func() error { return s.Renew(ctx, leased[1].ID, leased[1].LeaseToken, renewTo) }))

	g.releaseOnce()
	wantOK(t, "write", append(dones, firstDone)...)
	wantCommits(t, g, 1, len(dones))
	mustHave(t, s, subs...)
	if len(claimed) != 1 {
		t.Fatalf("claimed %d deliveries, want 1", len(claimed))
	}
	if d, err := s.GetDelivery(ctx, claimed[0].ID); err != nil || d.Status != outbox.DeliverySending || d.LeaseToken != claimed[0].LeaseToken {
		t.Errorf("claimed delivery = %+v (err %v), want sending under the claim's token", d, err)
	}
	if d, err := s.GetDelivery(ctx, leased[0].ID); err != nil || d.Status != outbox.DeliverySent {
		t.Errorf("completed delivery = %+v (err %v), want sent", d, err)
	}
	if as, err := s.ListAttempts(ctx, leased[0].ID); err != nil || len(as) != 1 {
		t.Errorf("completed delivery has %d attempts (err %v), want 1", len(as), err)
	}
	if d, err := s.GetDelivery(ctx, leased[1].ID); err != nil || !d.LockedUntil.Equal(renewTo) {
		t.Errorf("renewed delivery locked until %v (err %v), want %v", d.LockedUntil, err, renewTo)
	}
}

var errForced = errors.New("forced failure")

// A write that fails in a shared transaction is rolled back alone, with its own error:
// an accept whose rows were all written before it failed leaves none, and the writes
// beside it commit.
func TestFailingWriteIsRolledBackAlone(t *testing.T) {
	ctx := context.Background()
	s, g, firstDone := newHeldStore(t)

	ss := newSubs(3)
	ok1, bad, ok2 := ss[0], ss[1], ss[2]
	ok1Done := g.start(acceptWrite(s, ctx, ok1))
	badDone := g.start(acceptWrite(s, outbox.WithBeforeCommit(ctx, func() error { return errForced }), bad))
	ok2Done := g.start(acceptWrite(s, ctx, ok2))
	staleDone := g.start(func() error { return s.Renew(ctx, uuid.Must(uuid.NewV7()), "no-such-lease", time.Now()) })
	g.releaseOnce()

	if err := <-badDone; !errors.Is(err, errForced) {
		t.Errorf("failing accept: err = %v, want the forced failure", err)
	}
	if err := <-staleDone; !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("renewal of a lease nobody holds: err = %v, want ErrLeaseLost", err)
	}
	wantOK(t, "accept beside the failing one", firstDone, ok1Done, ok2Done)
	wantCommits(t, g, 1, 4)
	mustHave(t, s, ok1, ok2)
	mustNotHave(t, s, bad)
	evs, err := s.ListEvents(ctx, outbox.EventSubmissionReceived, 0)
	if err != nil || len(evs) != 3 {
		t.Errorf("%d submission.received events (err %v), want 3 (none of the rolled-back accept)", len(evs), err)
	}
}

// A commit that fails fails every write it held, and none of their rows remain.
func TestFailedCommitFailsEveryWriteInIt(t *testing.T) {
	ctx := context.Background()
	s := newSQLite(t)
	lateSub := storetest.NewSubmission("contact")
	storetest.MustAccept(t, s, lateSub, storetest.NewDelivery(lateSub, "email", "sales@example.com"))
	leased, err := s.Claim(ctx, outbox.ClaimParams{Owner: "w", Limit: 1, Lease: time.Minute})
	if err != nil || len(leased) != 1 {
		t.Fatalf("claim = %d rows (err %v), want 1", len(leased), err)
	}

	g, firstDone := holdFirstAccept(t, s)
	g.fail = func(int) error { return errForced }
	var subs []*outbox.Submission
	var dones []<-chan error
	for range 3 {
		sub := storetest.NewSubmission("contact")
		subs = append(subs, sub)
		dones = append(dones, g.start(acceptWrite(s, ctx, sub)))
	}
	now := time.Now()
	dones = append(dones, g.start(func() error {
		return outbox.CompleteOne(ctx, s, outbox.Completion{
			DeliveryID: leased[0].ID, LeaseToken: leased[0].LeaseToken, Status: outbox.DeliverySent, Provider: "fake",
			Attempt: outbox.Attempt{Provider: "fake", StartedAt: now, FinishedAt: now, Outcome: outbox.OutcomeSent}, Now: now,
		})
	}))
	g.releaseOnce()

	if err := <-firstDone; err != nil {
		t.Errorf("the first accept, committed alone: %v", err)
	}
	for i, done := range dones {
		if err := <-done; !errors.Is(err, errForced) {
			t.Errorf("write %d in the failed commit: err = %v, want the forced failure", i, err)
		}
	}
	wantCommits(t, g, 1, len(dones))
	mustNotHave(t, s, subs...)
	if d, err := s.GetDelivery(ctx, leased[0].ID); err != nil || d.Status != outbox.DeliverySending {
		t.Errorf("delivery after the failed commit = %+v (err %v), want still sending", d, err)
	}
	if as, err := s.ListAttempts(ctx, leased[0].ID); err != nil || len(as) != 0 {
		t.Errorf("%d attempts (err %v) after the failed commit, want 0", len(as), err)
	}
}

// A caller whose ctx ends while its write waits is answered at once, its write never
// runs, and the writes it would have shared a commit with commit.
func TestCanceledWaitingCallerLeavesTheOthersAlone(t *testing.T) {
	ctx := context.Background()
	s, g, firstDone := newHeldStore(t)

	ss := newSubs(3)
	gone, stay1, stay2 := ss[0], ss[1], ss[2]
	stay1Done := g.start(acceptWrite(s, ctx, stay1))
	gctx, cancel := context.WithCancel(ctx)
	goneDone := g.start(acceptWrite(s, gctx, gone))
	stay2Done := g.start(acceptWrite(s, ctx, stay2))
	cancel()
	// Answered while the commit before it is still held: it does not wait for it.
	if err := <-goneDone; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled caller: err = %v, want context.Canceled", err)
	}
	g.releaseOnce()
	wantOK(t, "accept beside the canceled one", firstDone, stay1Done, stay2Done)
	wantCommits(t, g, 1, 2)
	mustHave(t, s, stay1, stay2)
	mustNotHave(t, s, gone)
}

// A caller whose ctx ends while its write runs hears what the commit decided, and the
// transaction is not interrupted for the others.
func TestCallerCanceledWhileItsWriteRunsHearsTheCommit(t *testing.T) {
	ctx := context.Background()
	s, g, firstDone := newHeldStore(t)

	ss := newSubs(2)
	mid, after := ss[0], ss[1]
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The hook runs inside mid's write, after its rows: the caller goes mid-write.
	midDone := g.start(acceptWrite(s, outbox.WithBeforeCommit(mctx, func() error { cancel(); return nil }), mid))
	afterDone := g.start(acceptWrite(s, ctx, after))
	g.releaseOnce()
	if err := <-midDone; err != nil {
		t.Errorf("caller canceled during its write: err = %v, want nil (its write committed)", err)
	}
	wantOK(t, "accept beside it", firstDone, afterDone)
	wantCommits(t, g, 1, 2)
	mustHave(t, s, mid, after)
}

// A shared transaction starts no write past its bound, and a write that may be long (a
// submission with files) has a transaction of its own; the rest keep their order.
func TestSharedTransactionsAreBounded(t *testing.T) {
	ctx := context.Background()
	s, g, firstDone := newHeldStore(t)
	sqlitestore.SetWriteLimits(s, 3, time.Hour)
	var subs []*outbox.Submission
	var dones []<-chan error
	for i := range 7 {
		sub := storetest.NewSubmission("apply")
		if i == 4 {
			sub.Files = []outbox.File{storetest.NewFile(sub, "cv", "cv.pdf", []byte("%PDF-1.7 short"))}
		}
		subs = append(subs, sub)
		dones = append(dones, g.start(acceptWrite(s, ctx, sub)))
	}
	g.releaseOnce()
	wantOK(t, "write", append(dones, firstDone)...)
	// 3 (the bound), 1 (before the one with a file), 1 (the file), 2.
	wantCommits(t, g, 1, 3, 1, 1, 2)
	mustHave(t, s, subs...)
}

// A shared transaction past its time bound starts no new write.
func TestSharedTransactionsAreBoundedInTime(t *testing.T) {
	s, g, firstDone := newHeldStore(t)
	sqlitestore.SetWriteLimits(s, 0, time.Nanosecond)
	wantOneCommitEach(t, s, g, firstDone, 3)
}

// With MaxSharedWrites 1 (the bench's one-commit-per-request baseline) every write has a
// commit of its own.
func TestOneWritePerTransaction(t *testing.T) {
	s, err := sqlitestore.OpenWith(context.Background(), filepath.Join(t.TempDir(), "outbox.db"), sqlitestore.Options{MaxSharedWrites: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	g, firstDone := holdFirstAccept(t, s)
	wantOneCommitEach(t, s, g, firstDone, 3)
}

// With the file locked by another connection (another process, an operator's sqlite3
// shell) beyond the busy timeout, a caller leaves at its own deadline, not SQLite's; its
// write is never made, and the store writes again once the lock goes.
func TestLockedFileCallerLeavesAtItsDeadline(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outbox.db")
	s := storetest.OpenSQLiteAt(t, path)
	conn, err := rawDB(t, path).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	gone := storetest.NewSubmission("contact")
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := acceptWrite(s, dctx, gone)(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("accept while locked: err = %v, want DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("accept while locked answered after %v, want at its 300ms deadline (busy timeout 10s)", took)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	later := storetest.NewSubmission("contact")
	storetest.MustAccept(t, s, later, storetest.NewDelivery(later, "email", "sales@example.com"))
	mustHave(t, s, later)
	mustNotHave(t, s, gone)
}

// Two stores on one file (two processes, or the old and new store of a test) each
// combine their own writes and wait for each other's lock: none fails busy.
func TestTwoStoresOnOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outbox.db")
	stores := []*sqlitestore.Store{storetest.OpenSQLiteAt(t, path), storetest.OpenSQLiteAt(t, path)}
	const n = 64
	acceptConcurrently(t, n, func(i int) *sqlitestore.Store { return stores[i%2] })
	for i, s := range stores {
		evs, err := s.ListEvents(ctx, outbox.EventSubmissionReceived, 0)
		if err != nil || len(evs) != n {
			t.Errorf("store %d sees %d submissions (err %v), want %d", i, len(evs), err, n)
		}
	}
}
