package adminapi

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// statsTTL is how long scraped gauges reuse one Stats query: several scrapers (or a
// scraper and health probes) cost one indexed query per TTL, whatever their rate.
const statsTTL = 5 * time.Second

// statsTimeout bounds the query behind a scrape.
const statsTimeout = 2 * time.Second

var (
	backlogDesc = prometheus.NewDesc("form_outbox_backlog",
		"Deliveries not yet sent: pending, failed with a retry scheduled, or sending.", nil, nil)
	oldestDueDesc = prometheus.NewDesc("form_outbox_oldest_due_seconds",
		"How long the oldest due delivery has been waiting (0 when none is due).", nil, nil)
	deadDesc = prometheus.NewDesc("form_outbox_dead_deliveries",
		"Deliveries in status dead, waiting for an operator to retry them.", nil, nil)
	storageUpDesc = prometheus.NewDesc("form_outbox_storage_up",
		"1 when the last stats query against the outbox database succeeded, else 0.", nil, nil)
)

// LiveStats is the outbox's live numbers (Ops.Stats) cached for statsTTL, shared by the
// health route and the gauges of Caddy's /metrics, which it serves as a
// prometheus.Collector.
type LiveStats struct {
	store outbox.Store
	now   func() time.Time

	mu  sync.Mutex
	st  outbox.Stats
	at  time.Time // when st was read; zero: never
	err error
}

// NewLiveStats reads the stats of store, which must implement outbox.Ops to have any.
func NewLiveStats(store outbox.Store) *LiveStats {
	return &LiveStats{store: store, now: time.Now}
}

// Remember lets a fresh read (a health check) serve the next scrape too. Its age is
// counted on the cache's own clock, the one read judges it by. A nil LiveStats
// remembers nothing.
func (m *LiveStats) Remember(st outbox.Stats) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st, m.at, m.err = st, m.now(), nil
}

// read returns the cached stats while they are younger than statsTTL and the last read
// succeeded; otherwise it queries the store. A failed read is retried on the next call.
func (m *LiveStats) read() (outbox.Stats, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if !m.at.IsZero() && now.Sub(m.at) < statsTTL && m.err == nil {
		return m.st, m.at, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	st, err := m.store.Stats(ctx, now)
	m.st, m.at, m.err = st, now, err
	return st, now, err
}

// Describe implements prometheus.Collector.
func (m *LiveStats) Describe(ch chan<- *prometheus.Desc) {
	ch <- backlogDesc
	ch <- oldestDueDesc
	ch <- deadDesc
	ch <- storageUpDesc
}

// Collect implements prometheus.Collector. When the database does not answer, only
// form_outbox_storage_up (0) is reported: a stale backlog would look healthy.
func (m *LiveStats) Collect(ch chan<- prometheus.Metric) {
	st, at, err := m.read()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(storageUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(storageUpDesc, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(st.Backlog))
	ch <- prometheus.MustNewConstMetric(oldestDueDesc, prometheus.GaugeValue, st.OldestDueAge(at).Seconds())
	ch <- prometheus.MustNewConstMetric(deadDesc, prometheus.GaugeValue, float64(st.Dead))
}

var _ prometheus.Collector = (*LiveStats)(nil)
