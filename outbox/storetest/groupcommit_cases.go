package storetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
)

// recordingStore wraps a store's AcceptBatch: it notes when each batch's commit returned
// (before the GroupCommitter can answer anyone) and can fail a chosen batch just before
// its COMMIT.
type recordingStore struct {
	outbox.Store

	mu          sync.Mutex
	committedAt map[uuid.UUID]time.Time
	batchSizes  []int
	// failIf, when set, decides from a batch's size whether to fail it before COMMIT.
	failIf func(n int) bool
	failed []uuid.UUID
}

var errForced = errors.New("forced commit failure")

func (r *recordingStore) AcceptBatch(ctx context.Context, items []outbox.AcceptItem) []outbox.AcceptOutcome {
	r.mu.Lock()
	r.batchSizes = append(r.batchSizes, len(items))
	fail := r.failIf != nil && r.failIf(len(items))
	if fail {
		r.failIf = nil
		for _, it := range items {
			r.failed = append(r.failed, it.Submission.ID)
		}
	}
	r.mu.Unlock()
	if fail {
		ctx = outbox.WithBeforeCommit(ctx, func() error { return errForced })
	}
	out := r.Store.AcceptBatch(ctx, items)
	done := time.Now()
	r.mu.Lock()
	for _, it := range items {
		r.committedAt[it.Submission.ID] = done
	}
	r.mu.Unlock()
	return out
}

func newRecordingStore(t testing.TB, s outbox.Store) *recordingStore {
	t.Helper()
	return &recordingStore{Store: s, committedAt: map[uuid.UUID]time.Time{}}
}

// countRows counts a table's rows straight from the database, bypassing the Store API.
func countRows(t testing.TB, s outbox.Store, table string) int {
	t.Helper()
	ctx := testCtx(t)
	var n int
	switch st := s.(type) {
	case *pgstore.Store:
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
	case *sqlitestore.Store:
		db, err := sql.Open("sqlite", "file:"+st.Path()+"?mode=ro")
		if err != nil {
			t.Fatalf("open %s: %v", st.Path(), err)
		}
		defer db.Close()
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
	default:
		t.Fatalf("countRows: unknown store %T", s)
	}
	return n
}

var _ = registerAlone("GroupCommitConcurrentIdempotency", func(t *testing.T, s outbox.Store) {
	const (
		callers = 64
		each    = 500
	)
	rec := newRecordingStore(t, s)
	var g outbox.GroupCommitter
	ctx := testCtx(t)

	type answer struct {
		sub      *outbox.Submission
		res      outbox.AcceptResult
		err      error
		answered time.Time
	}
	answers := make([][]answer, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[c] = make([]answer, each)
			for j := range each {
				// Every tenth submission repeats a key another caller uses at about
				// the same time, so duplicates race across batches and flushers.
				key := fmt.Sprintf("k-%d-%d", c, j)
				if j%10 == 9 {
					key = fmt.Sprintf("k-%d-%d", (c+1)%callers, j-1)
				}
				sub := NewSubmission("contact", WithIdempotencyKey(key))
				res, err := g.Accept(ctx, rec, sub, []outbox.Delivery{
					NewDelivery(sub, "email", "sales@example.com"),
					NewDelivery(sub, "webhook", "https://crm.example.com/hook"),
				})
				answers[c][j] = answer{sub: sub, res: res, err: err, answered: time.Now()}
				if err == nil && !res.Duplicate && j%25 == 0 {
					// Visible from another connection: committed, not merely written.
					if _, gerr := s.GetSubmission(ctx, res.ID); gerr != nil {
						answers[c][j].err = fmt.Errorf("answered but not readable: %w", gerr)
					}
				}
			}
		}()
	}
	wg.Wait()

	originals := map[string]uuid.UUID{}
	byKey := map[string][]answer{}
	for c := range callers {
		for _, a := range answers[c] {
			if a.err != nil {
				t.Fatalf("accept %s: %v", a.sub.ID, a.err)
			}
			rec.mu.Lock()
			committed, ok := rec.committedAt[a.sub.ID]
			rec.mu.Unlock()
			if !ok || a.answered.Before(committed) {
				t.Fatalf("submission %s answered at %v, before its batch committed (%v, known %v)", a.sub.ID, a.answered, committed, ok)
			}
			byKey[a.sub.IdempotencyKey] = append(byKey[a.sub.IdempotencyKey], a)
			if !a.res.Duplicate {
				if a.res.ID != a.sub.ID {
					t.Fatalf("first submission with key %q got id %s, want its own %s", a.sub.IdempotencyKey, a.res.ID, a.sub.ID)
				}
				if prev, dup := originals[a.sub.IdempotencyKey]; dup {
					t.Fatalf("key %q stored twice: %s and %s", a.sub.IdempotencyKey, prev, a.sub.ID)
				}
				originals[a.sub.IdempotencyKey] = a.sub.ID
			}
		}
	}
	for key, as := range byKey {
		orig, ok := originals[key]
		if !ok {
			t.Fatalf("key %q: every caller was told duplicate, nobody stored it", key)
		}
		for _, a := range as {
			if a.res.ID != orig || a.res.Status != outbox.SubmissionAccepted {
				t.Fatalf("key %q: caller %s got %+v, want original %s accepted", key, a.sub.ID, a.res, orig)
			}
		}
	}
	distinct := callers*each - callers*each/10
	if len(originals) != distinct {
		t.Fatalf("%d keys stored, want %d", len(originals), distinct)
	}
	for table, want := range map[string]int{"submissions": distinct, "deliveries": 2 * distinct, "events": distinct} {
		if got := countRows(t, s, table); got != want {
			t.Errorf("%s has %d rows, want %d", table, got, want)
		}
	}
	biggest := 0
	for _, n := range rec.batchSizes {
		biggest = max(biggest, n)
	}
	if biggest < 2 || len(rec.batchSizes) >= callers*each {
		t.Errorf("no group commit happened: %d batches for %d submissions, the biggest of %d", len(rec.batchSizes), callers*each, biggest)
	}
})

var _ = register("GroupCommitFailedTransactionFailsAllItsMembers", func(t *testing.T, s outbox.Store) {
	const (
		callers = 16
		each    = 20
	)
	rec := newRecordingStore(t, s)
	rec.failIf = func(n int) bool { return n >= 2 }
	g := outbox.GroupCommitter{Flushers: 1}
	ctx := testCtx(t)
	type answer struct {
		sub *outbox.Submission
		err error
	}
	answers := make(chan answer, callers*each)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				sub := NewSubmission("contact")
				_, err := g.Accept(ctx, rec, sub, []outbox.Delivery{NewDelivery(sub, "email", "sales@example.com")})
				answers <- answer{sub, err}
			}
		}()
	}
	wg.Wait()
	close(answers)

	failed := map[uuid.UUID]bool{}
	for _, id := range rec.failed {
		failed[id] = true
	}
	if len(failed) < 2 {
		t.Fatalf("no batch of two or more formed to fail (batch sizes %v)", rec.batchSizes)
	}
	stored := 0
	for a := range answers {
		_, gerr := s.GetSubmission(ctx, a.sub.ID)
		if failed[a.sub.ID] {
			if !errors.Is(a.err, errForced) || !errors.Is(a.err, outbox.ErrBatchMemberFailed) {
				t.Errorf("member %s of the failed transaction got %v, want the forced failure", a.sub.ID, a.err)
			}
			if !errors.Is(gerr, outbox.ErrNotFound) {
				t.Errorf("member %s of the failed transaction is stored (get: %v)", a.sub.ID, gerr)
			}
			continue
		}
		if a.err != nil || gerr != nil {
			t.Errorf("submission %s outside the failed transaction: accept %v, get %v", a.sub.ID, a.err, gerr)
		}
		stored++
	}
	if want := callers*each - len(failed); stored != want || countRows(t, s, "submissions") != want {
		t.Errorf("stored %d (table %d), want %d", stored, countRows(t, s, "submissions"), want)
	}
})

var _ = register("AcceptBatchIsolatesABadItem", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	first := NewSubmission("contact", WithIdempotencyKey("same"))
	firstD := NewDelivery(first, "email", "sales@example.com")
	bad := NewSubmission("contact")
	badD := NewDelivery(bad, "email", "sales@example.com")
	badD.ID = firstD.ID // collides with first's delivery: a constraint error of bad alone
	repeat := NewSubmission("contact", WithIdempotencyKey("same"))
	last := NewSubmission("contact")
	last.Events = []outbox.Event{{Kind: outbox.EventSchemaDrift, Data: []byte(`{"field":"x"}`)}}
	out := s.AcceptBatch(ctx, []outbox.AcceptItem{
		{Submission: first, Deliveries: []outbox.Delivery{firstD}},
		{Submission: bad, Deliveries: []outbox.Delivery{badD}},
		{Submission: repeat, Deliveries: []outbox.Delivery{NewDelivery(repeat, "email", "sales@example.com")}},
		{Submission: last, Deliveries: []outbox.Delivery{NewDelivery(last, "email", "sales@example.com")}},
	})
	if len(out) != 4 {
		t.Fatalf("%d outcomes for 4 items", len(out))
	}
	if out[0].Err != nil || out[0].Result != (outbox.AcceptResult{ID: first.ID, Status: outbox.SubmissionAccepted}) {
		t.Errorf("first: %+v", out[0])
	}
	if out[1].Err == nil || errors.Is(out[1].Err, outbox.ErrBatchMemberFailed) {
		t.Errorf("bad item: %+v, want its own error", out[1])
	}
	if out[2].Err != nil || out[2].Result != (outbox.AcceptResult{ID: first.ID, Status: outbox.SubmissionAccepted, Duplicate: true}) {
		t.Errorf("repeat of an earlier item's key: %+v, want a duplicate of %s", out[2], first.ID)
	}
	if out[3].Err != nil || out[3].Result.ID != last.ID {
		t.Errorf("last: %+v", out[3])
	}
	if _, err := s.GetSubmission(ctx, bad.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("bad item stored (get: %v)", err)
	}
	if got := countRows(t, s, "submissions"); got != 2 {
		t.Errorf("%d submissions stored, want 2", got)
	}
	if got := countRows(t, s, "events"); got != 3 {
		t.Errorf("%d events stored, want 3 (two received, one drift)", got)
	}
	drift, err := s.ListEvents(ctx, outbox.EventSchemaDrift, 10)
	if err != nil || len(drift) != 1 || drift[0].SubmissionID != last.ID {
		t.Errorf("drift events = %+v (%v), want one of %s", drift, err, last.ID)
	}
})

var _ = register("CompleteBatchKeepsFencingPerRow", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	for range 3 {
		acceptDue(t, s, t0)
	}
	ds := claim(t, s, t0, 3)
	if len(ds) != 3 {
		t.Fatalf("claimed %d, want 3", len(ds))
	}
	// ds[1]'s lease expires and another worker takes it: worker-a's token is stale.
	retaken := claimAs(t, s, "worker-b", t0.Add(2*testLease), 1)
	if len(retaken) != 1 {
		t.Fatalf("re-claimed %d, want 1", len(retaken))
	}
	var stale outbox.Delivery
	var fresh []outbox.Delivery
	for _, d := range ds {
		if d.ID == retaken[0].ID {
			stale = d
		} else {
			fresh = append(fresh, d)
		}
	}
	now := t0.Add(time.Second)
	errs := s.CompleteBatch(ctx, []outbox.Completion{
		completion(fresh[0], outbox.DeliverySent, outbox.OutcomeSent, now, nil),
		completion(stale, outbox.DeliverySent, outbox.OutcomeSent, now, nil),
		completion(fresh[1], outbox.DeliveryDead, outbox.OutcomePermanent, now, &outbox.Event{Kind: outbox.EventDeliveryDead}),
	})
	if len(errs) != 3 || errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], outbox.ErrLeaseLost) {
		t.Fatalf("errors = %v, want nil, lease lost, nil", errs)
	}
	if got := getDelivery(t, s, fresh[0].ID); got.Status != outbox.DeliverySent || got.LeaseToken != "" {
		t.Errorf("fresh[0] = %s (token %q), want sent, lease cleared", got.Status, got.LeaseToken)
	}
	if got := getDelivery(t, s, fresh[1].ID); got.Status != outbox.DeliveryDead {
		t.Errorf("fresh[1] = %s, want dead", got.Status)
	}
	got := getDelivery(t, s, stale.ID)
	if got.Status != outbox.DeliverySending || got.LeaseToken != retaken[0].LeaseToken || got.LeaseOwner != "worker-b" {
		t.Errorf("stale = %s owner %q, want still sending under worker-b's lease", got.Status, got.LeaseOwner)
	}
	for _, d := range []outbox.Delivery{fresh[0], fresh[1], stale} {
		as, err := s.ListAttempts(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if d.ID == stale.ID {
			want = 0
		}
		if len(as) != want {
			t.Errorf("delivery %s has %d attempts recorded, want %d", d.ID, len(as), want)
		}
	}
	dead, err := s.ListEvents(ctx, outbox.EventDeliveryDead, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].DeliveryID != fresh[1].ID || dead[0].SubmissionID != fresh[1].SubmissionID {
		t.Errorf("dead events = %+v, want one for %s", dead, fresh[1].ID)
	}

	// A batch whose transaction fails records none of its completions.
	fctx := outbox.WithBeforeCommit(ctx, func() error { return errForced })
	errs = s.CompleteBatch(fctx, []outbox.Completion{completion(retaken[0], outbox.DeliverySent, outbox.OutcomeSent, now, nil)})
	if !errors.Is(errs[0], errForced) {
		t.Fatalf("forced failure: %v", errs[0])
	}
	if got := getDelivery(t, s, stale.ID); got.Status != outbox.DeliverySending {
		t.Errorf("after a failed batch the delivery is %s, want still sending", got.Status)
	}
})

// A stale and a fresh lease of one delivery can meet in one batch (a slow worker's late
// report beside the new owner's). Only the holder's completion may land, whichever comes
// first in the batch; on PostgreSQL this is the per-row pipeline, not the set statement.
var _ = register("CompleteBatchWithTwoLeasesOfOneDelivery", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	acceptDue(t, s, t0)
	other := acceptDue(t, s, t0.Add(time.Millisecond))
	stale := claimAs(t, s, "worker-a", t0, 1)[0]
	later := t0.Add(2 * testLease)
	fresh := claimAs(t, s, "worker-b", later, 2)
	if len(fresh) == 2 && fresh[0].ID == other.ID {
		fresh[0], fresh[1] = fresh[1], fresh[0]
	}
	if len(fresh) != 2 || fresh[0].ID != stale.ID || fresh[1].ID != other.ID || fresh[0].LeaseToken == stale.LeaseToken {
		t.Fatalf("re-claim = %v, want %s under a new token and %s", ids(fresh), stale.ID, other.ID)
	}
	now := later.Add(time.Second)
	freshC := completion(fresh[0], outbox.DeliverySent, outbox.OutcomeSent, now, nil)
	errs := s.CompleteBatch(ctx, []outbox.Completion{
		completion(stale, outbox.DeliveryDead, outbox.OutcomePermanent, now, &outbox.Event{Kind: outbox.EventDeliveryDead}),
		freshC,
		completion(fresh[1], outbox.DeliveryFailed, outbox.OutcomeTemporary, now, nil),
	})
	if len(errs) != 3 || !errors.Is(errs[0], outbox.ErrLeaseLost) || errs[1] != nil || errs[2] != nil {
		t.Fatalf("errors = %v, want lease lost, nil, nil", errs)
	}
	if got := getDelivery(t, s, stale.ID); got.Status != outbox.DeliverySent || got.LeaseToken != "" ||
		got.ProviderMessageID != freshC.ProviderMessageID {
		t.Errorf("delivery = %s (token %q, message %q), want sent by worker-b's completion %q",
			got.Status, got.LeaseToken, got.ProviderMessageID, freshC.ProviderMessageID)
	}
	if got := getDelivery(t, s, other.ID); got.Status != outbox.DeliveryFailed {
		t.Errorf("other delivery = %s, want failed", got.Status)
	}
	if as, err := s.ListAttempts(ctx, stale.ID); err != nil || !reflect.DeepEqual(as, []outbox.Attempt{freshC.Attempt}) {
		t.Errorf("attempts = %+v (%v), want only worker-b's %+v", as, err, freshC.Attempt)
	}
	if dead, err := s.ListEvents(ctx, outbox.EventDeliveryDead, 10); err != nil || len(dead) != 0 {
		t.Errorf("the stale completion wrote %d dead events (%v)", len(dead), err)
	}
})
