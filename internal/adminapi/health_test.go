package adminapi

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
)

type fakeWorker struct {
	running bool
	last    time.Time
}

func (w fakeWorker) Running() bool       { return w.running }
func (w fakeWorker) Owner() string       { return "host-1" }
func (w fakeWorker) LastTick() time.Time { return w.last }

func okSpool() SpoolHealth { return SpoolHealth{Healthy: true} }

func TestCheckHealthVerdicts(t *testing.T) {
	st := openStore(t)
	poll := 15 * time.Second
	for name, c := range map[string]struct {
		worker   fakeWorker
		disabled bool
		spool    func() SpoolHealth
		problems []string
	}{
		"all well":   {worker: fakeWorker{running: true, last: time.Now()}, spool: okSpool},
		"worker off": {disabled: true, spool: okSpool},
		"worker stopped": {worker: fakeWorker{last: time.Now()}, spool: okSpool,
			problems: []string{"worker not running"}},
		"worker stuck": {worker: fakeWorker{running: true, last: time.Now().Add(-4 * poll)}, spool: okSpool,
			problems: []string{"worker has not polled within 3 poll intervals"}},
		"never polled": {worker: fakeWorker{running: true}, spool: okSpool,
			problems: []string{"worker has not polled within 3 poll intervals"}},
		"spool full": {worker: fakeWorker{running: true, last: time.Now()},
			spool:    func() SpoolHealth { return SpoolHealth{Enabled: true, Error: "disk full"} },
			problems: []string{"spool cannot take submissions: disk full"}},
	} {
		h := CheckHealth(context.Background(), HealthProbe{Store: st, Driver: "sqlite", Explain: func(err error) string { return err.Error() },
			Worker: c.worker, WorkerDisabled: c.disabled, PollInterval: poll, Spool: c.spool})
		wantStatus := "ok"
		if len(c.problems) > 0 {
			wantStatus = "unhealthy"
		}
		if h.Status != wantStatus || !slices.Equal(h.Problems, c.problems) {
			t.Errorf("%s: status %q problems %q, want %q %q", name, h.Status, h.Problems, wantStatus, c.problems)
		}
		if !h.Storage.Reachable || h.Outbox == nil || h.Storage.Driver != "sqlite" || h.Worker.PollIntervalSeconds != 15 {
			t.Errorf("%s: storage %+v outbox %+v worker %+v", name, h.Storage, h.Outbox, h.Worker)
		}
	}
}

func TestCheckHealthExplainsAnUnreachableStore(t *testing.T) {
	st := openStore(t)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	h := CheckHealth(context.Background(), HealthProbe{Store: st, Driver: "sqlite",
		Explain: func(error) string { return "the database file is gone" },
		Worker:  fakeWorker{running: true, last: time.Now()}, PollInterval: time.Second, Spool: okSpool})
	if h.Status != "unhealthy" || h.Storage.Reachable || h.Storage.Error != "the database file is gone" ||
		h.Outbox != nil || !slices.Equal(h.Problems, []string{"storage unreachable"}) {
		t.Fatalf("health %+v", h)
	}
}

// countingStore counts Stats queries and can fail them.
type countingStore struct {
	*sqlitestore.Store
	queries atomic.Int32
	fail    atomic.Bool
}

func (s *countingStore) Stats(ctx context.Context, now time.Time) (outbox.Stats, error) {
	s.queries.Add(1)
	if s.fail.Load() {
		return outbox.Stats{}, errors.New("database is down")
	}
	return s.Store.Stats(ctx, now)
}

func TestLiveStatsShareOneQueryPerTTL(t *testing.T) {
	st := &countingStore{Store: openStore(t)}
	now := time.Now()
	ls := NewLiveStats(st)
	ls.now = func() time.Time { return now }

	// A health check's read serves the scrape that follows it.
	CheckHealth(context.Background(), HealthProbe{Store: st, Explain: func(err error) string { return err.Error() },
		Worker: fakeWorker{running: true, last: now}, PollInterval: time.Second, Spool: okSpool, Stats: ls})
	if n := scrape(t, ls); n != 4 || st.queries.Load() != 1 {
		t.Fatalf("after health: %d metrics, %d queries; want 4 metrics from 1 query", n, st.queries.Load())
	}
	now = now.Add(statsTTL - time.Millisecond)
	scrape(t, ls)
	if st.queries.Load() != 1 {
		t.Fatalf("scrape within the TTL queried again (%d queries)", st.queries.Load())
	}

	// Past the TTL a scrape queries; a failed query reports only storage_up 0, and the
	// next scrape tries again instead of caching the failure.
	now = now.Add(2 * time.Millisecond)
	st.fail.Store(true)
	if n := scrape(t, ls); n != 1 || st.queries.Load() != 2 {
		t.Fatalf("failed read: %d metrics, %d queries; want storage_up alone after 2 queries", n, st.queries.Load())
	}
	st.fail.Store(false)
	if n := scrape(t, ls); n != 4 || st.queries.Load() != 3 {
		t.Fatalf("recovered read: %d metrics, %d queries; want 4 after 3", n, st.queries.Load())
	}
}

// scrape gathers ls as /metrics would and counts the series; storage_up must be there.
func scrape(t *testing.T, ls *LiveStats) int {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(ls)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	up := false
	for _, mf := range mfs {
		up = up || mf.GetName() == "form_outbox_storage_up"
	}
	if !up {
		t.Fatal("no form_outbox_storage_up")
	}
	return len(mfs)
}

// TestCheckHealthShowsCanaryVerdicts: the last verdicts are in the body, a failed one
// with its error, and the instance stays healthy; a failed read of them is a storage
// problem.
func TestCheckHealthShowsCanaryVerdicts(t *testing.T) {
	st := openStore(t)
	at := time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)
	results := []outbox.CanaryResult{
		{Form: "contact", Route: "crm", Channel: outbox.ChannelWebhook, PeriodStart: at.Add(-5 * time.Second), Error: "dead: 500", At: at,
			FailingSince: at.Add(-6 * time.Hour)},
		{Form: "contact", Route: "email", Channel: outbox.ChannelEmail, PeriodStart: at.Add(-5 * time.Second), Passed: true, At: at},
	}
	probe := HealthProbe{Store: st, Driver: "sqlite", Explain: func(err error) string { return err.Error() },
		Worker: fakeWorker{running: true, last: time.Now()}, PollInterval: time.Second, Spool: okSpool,
		Canary: func(context.Context) ([]outbox.CanaryResult, error) { return results, nil }}
	h := CheckHealth(context.Background(), probe)
	since := at.Add(-6 * time.Hour)
	want := []CanaryHealth{
		{Form: "contact", Route: "crm", Channel: "webhook", Error: "dead: 500", At: at, PeriodStart: at.Add(-5 * time.Second), FailingSince: &since},
		{Form: "contact", Route: "email", Channel: "email", Passed: true, At: at, PeriodStart: at.Add(-5 * time.Second)},
	}
	if h.Status != "ok" || len(h.Canary) != 2 || h.Canary[1] != want[1] || h.Canary[0].FailingSince == nil ||
		!h.Canary[0].FailingSince.Equal(since) || h.Canary[0].Error != want[0].Error || h.Canary[0].Route != "crm" {
		t.Errorf("health = %q, canary %+v; want ok with %+v", h.Status, h.Canary, want)
	}
	probe.Canary = func(context.Context) ([]outbox.CanaryResult, error) { return nil, errors.New("no such table") }
	if h := CheckHealth(context.Background(), probe); h.Status != "unhealthy" || !slices.Equal(h.Problems, []string{"storage unreachable"}) {
		t.Errorf("health with the canary read failing = %q %q, want unhealthy: storage unreachable", h.Status, h.Problems)
	}
}
