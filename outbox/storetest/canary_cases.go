package storetest

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func canaryRun(form string, start time.Time) outbox.CanaryRun {
	return outbox.CanaryRun{Form: form, PeriodStart: start, SubmissionID: uuid.Must(uuid.NewV7()), CreatedAt: start.Add(time.Second)}
}

func canaryResult(route string, start time.Time, passed bool, errText string) outbox.CanaryResult {
	return outbox.CanaryResult{Form: "contact", Route: route, Channel: outbox.ChannelWebhook, PeriodStart: start,
		SubmissionID: uuid.Must(uuid.NewV7()), Passed: passed, Error: errText, At: start.Add(time.Minute)}
}

var _ = register("CanaryRunOncePerFormAndPeriod", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	start := t0.Truncate(time.Hour)
	if _, err := s.LastCanaryRun(ctx, "contact"); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("LastCanaryRun of a form without runs: %v, want ErrNotFound", err)
	}
	first := canaryRun("contact", start)
	if ok, err := s.RecordCanaryRun(ctx, first); err != nil || !ok {
		t.Fatalf("first run of the period = %v (%v), want recorded", ok, err)
	}
	// Another scheduler's run of the same period writes nothing: the first one stays.
	if ok, err := s.RecordCanaryRun(ctx, canaryRun("contact", start)); err != nil || ok {
		t.Errorf("second run of the period = %v (%v), want refused", ok, err)
	}
	other := canaryRun("newsletter", start)
	if ok, err := s.RecordCanaryRun(ctx, other); err != nil || !ok {
		t.Errorf("another form's run of the period = %v (%v), want recorded", ok, err)
	}
	next := canaryRun("contact", start.Add(time.Hour))
	if ok, err := s.RecordCanaryRun(ctx, next); err != nil || !ok {
		t.Errorf("next period's run = %v (%v), want recorded", ok, err)
	}
	got, err := s.LastCanaryRun(ctx, "contact")
	if err != nil || !reflect.DeepEqual(got, next) {
		t.Errorf("LastCanaryRun = %+v (%v), want %+v", got, err, next)
	}
	if got, err := s.LastCanaryRun(ctx, "newsletter"); err != nil || got.SubmissionID != other.SubmissionID {
		t.Errorf("LastCanaryRun(newsletter) = %+v (%v), want %s", got, err, other.SubmissionID)
	}
})

var _ = register("CanaryRunRacesRecordOne", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	start := t0.Truncate(time.Hour)
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		won []uuid.UUID
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run := canaryRun("contact", start)
			ok, err := s.RecordCanaryRun(ctx, run)
			if err != nil {
				t.Errorf("record run: %v", err)
			}
			if ok {
				mu.Lock()
				won = append(won, run.SubmissionID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got, err := s.LastCanaryRun(ctx, "contact")
	if len(won) != 1 || err != nil || got.SubmissionID != won[0] {
		t.Errorf("8 racing runs of one period: %d recorded, stored %+v (%v), want exactly the one that won", len(won), got, err)
	}
})

var _ = register("CanaryResultKeepsTheFirstVerdictOfTheLatestRun", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	start := t0.Truncate(time.Hour)
	record := func(r outbox.CanaryResult) bool {
		t.Helper()
		ok, err := s.RecordCanaryResult(ctx, r)
		if err != nil {
			t.Fatalf("record result: %v", err)
		}
		return ok
	}
	results := func() []outbox.CanaryResult {
		t.Helper()
		got, err := s.CanaryResults(ctx)
		if err != nil {
			t.Fatalf("canary results: %v", err)
		}
		return got
	}
	if got := results(); len(got) != 0 {
		t.Fatalf("results of an empty store = %+v", got)
	}
	failed := canaryResult("webhook", start, false, "dead: 500 Internal Server Error")
	passed := canaryResult("email", start, true, "")
	passed.Channel = outbox.ChannelEmail
	if !record(failed) || !record(passed) {
		t.Fatal("first verdicts not recorded")
	}
	// A second verdict on the same run (another scheduler, later) changes nothing.
	if record(canaryResult("webhook", start, true, "")) {
		t.Error("second verdict on one run recorded")
	}
	failedAsStored := failed
	failedAsStored.FailingSince = failed.At
	if got := results(); !reflect.DeepEqual(got, []outbox.CanaryResult{passed, failedAsStored}) {
		t.Errorf("results = %+v, want email passed then webhook failed since its verdict", got)
	}
	// A later run's verdict replaces it; an earlier run's never does.
	later := canaryResult("webhook", start.Add(time.Hour), true, "")
	if !record(later) {
		t.Error("later run's verdict not recorded")
	}
	if record(canaryResult("webhook", start.Add(30*time.Minute), false, "late")) {
		t.Error("an earlier run's verdict replaced a later one's")
	}
	if got := results(); len(got) != 2 || !reflect.DeepEqual(got[1], later) {
		t.Errorf("results = %+v, want webhook's to be %+v", got, later)
	}
})

var _ = register("CanaryResultFailingSinceSpansFailuresInARow", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	start := t0.Truncate(time.Hour)
	since := func(r outbox.CanaryResult) time.Time {
		t.Helper()
		if _, err := s.RecordCanaryResult(ctx, r); err != nil {
			t.Fatal(err)
		}
		got, err := s.CanaryResults(ctx)
		if err != nil || len(got) != 1 {
			t.Fatalf("results = %+v (%v)", got, err)
		}
		return got[0].FailingSince
	}
	first := canaryResult("webhook", start, false, "dead: 410")
	if got := since(first); !got.Equal(first.At) {
		t.Errorf("failing since after the first failure = %s, want its verdict's time %s", got, first.At)
	}
	if got := since(canaryResult("webhook", start.Add(time.Hour), false, "dead: 410")); !got.Equal(first.At) {
		t.Errorf("failing since after a second failure = %s, want the first's %s", got, first.At)
	}
	if got := since(canaryResult("webhook", start.Add(2*time.Hour), true, "")); !got.IsZero() {
		t.Errorf("failing since after a pass = %s, want none", got)
	}
	again := canaryResult("webhook", start.Add(3*time.Hour), false, "dead: 500")
	if got := since(again); !got.Equal(again.At) {
		t.Errorf("failing since after a new failure = %s, want %s", got, again.At)
	}
})
