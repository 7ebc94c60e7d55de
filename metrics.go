package formoutbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Counters live at package level so they keep counting across config reloads; each
// config's registry (served by the admin endpoint's /metrics) registers them anew.
var (
	submissionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_submissions_total",
		Help: "Submissions stored, by form and status (accepted, spam, quarantined).",
	}, []string{"form", "status"})
	deliveriesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_deliveries_total",
		Help: "Delivery attempts recorded, by channel, provider and outcome (sent, temporary, permanent, ambiguous).",
	}, []string{"channel", "provider", "outcome"})
	deliveryDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "form_outbox_delivery_duration_seconds",
		Help:    "Time one delivery attempt spent with its provider(s).",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30},
	}, []string{"channel"})
	deadTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_deliveries_dead_total",
		Help: "Deliveries given up on (permanent error or attempts exhausted), by channel.",
	}, []string{"channel"})
)

// alertedChannels are the label values of the counters that README alert rules watch
// with increase(): a series that appears only with its first event gives increase() no
// earlier sample, so the first dead delivery would never alert. registerMetrics creates
// them at 0.
var alertedChannels = append([]outbox.Channel{outbox.ChannelEmail, outbox.ChannelWebhook}, outbox.ChatChannels...)

// Descriptions of intake's counters (intake/counters.go): what the defences did without
// a stored row to count from the database.
var (
	rateLimitedDesc = prometheus.NewDesc("form_outbox_rate_limited_total",
		"Posts over the form's rate limit, all answered 429.", []string{"form"}, nil)
	rateLimitedDroppedDesc = prometheus.NewDesc("form_outbox_rate_limited_dropped_total",
		"Rate-limited posts not stored because the form's quota of rate_limited rows for the window was used up.", []string{"form"}, nil)
	deduplicatedDesc = prometheus.NewDesc("form_outbox_deduplicated_total",
		"Double posts answered with the first post's id instead of being stored again.", []string{"form"}, nil)
)

// intakeCounters exports intake.ReadCounters at scrape time. The counters live in
// intake's package registry, so they stay monotonic across reloads like the ones above;
// each form's series exists from the Provision of its handler, at 0.
type intakeCounters struct{}

// Describe implements prometheus.Collector.
func (intakeCounters) Describe(ch chan<- *prometheus.Desc) {
	ch <- rateLimitedDesc
	ch <- rateLimitedDroppedDesc
	ch <- deduplicatedDesc
}

// Collect implements prometheus.Collector.
func (intakeCounters) Collect(ch chan<- prometheus.Metric) {
	for _, c := range intake.ReadCounters() {
		ch <- prometheus.MustNewConstMetric(rateLimitedDesc, prometheus.CounterValue, float64(c.RateLimited), c.Form)
		ch <- prometheus.MustNewConstMetric(rateLimitedDroppedDesc, prometheus.CounterValue, float64(c.RateLimitedDropped), c.Form)
		ch <- prometheus.MustNewConstMetric(deduplicatedDesc, prometheus.CounterValue, float64(c.Deduplicated), c.Form)
	}
}

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

// appMetrics computes the gauges from Ops.Stats, cached for statsTTL.
type appMetrics struct {
	app *App

	mu  sync.Mutex
	st  outbox.Stats
	at  time.Time // when st was read; zero: never
	err error
}

// rememberStats lets a fresh read (a health check) serve the next scrape too.
func (m *appMetrics) rememberStats(st outbox.Stats, at time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st, m.at, m.err = st, at, nil
}

func (m *appMetrics) stats() (outbox.Stats, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.at.IsZero() && time.Since(m.at) < statsTTL && m.err == nil {
		return m.st, m.at, nil
	}
	o, ok := m.app.store.(outbox.Ops)
	if !ok {
		return outbox.Stats{}, time.Time{}, errors.New("store has no stats")
	}
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	now := time.Now()
	st, err := o.Stats(ctx, now)
	m.st, m.at, m.err = st, now, err
	return st, now, err
}

// Describe implements prometheus.Collector.
func (m *appMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- backlogDesc
	ch <- oldestDueDesc
	ch <- deadDesc
	ch <- storageUpDesc
}

// Collect implements prometheus.Collector. When the database does not answer, only
// form_outbox_storage_up (0) is reported: a stale backlog would look healthy.
func (m *appMetrics) Collect(ch chan<- prometheus.Metric) {
	st, at, err := m.stats()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(storageUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(storageUpDesc, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(st.Backlog))
	ch <- prometheus.MustNewConstMetric(oldestDueDesc, prometheus.GaugeValue, st.OldestDueAge(at).Seconds())
	ch <- prometheus.MustNewConstMetric(deadDesc, prometheus.GaugeValue, float64(st.Dead))
}

// registerMetrics adds the outbox's metrics to this config's registry.
func (a *App) registerMetrics(reg *prometheus.Registry) error {
	a.metrics = &appMetrics{app: a}
	if reg == nil {
		return nil
	}
	for _, ch := range alertedChannels {
		deadTotal.WithLabelValues(string(ch))
	}
	for _, c := range []prometheus.Collector{submissionsTotal, deliveriesTotal, deliveryDuration, deadTotal, feedbackTotal, intakeCounters{}, a.metrics} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				continue
			}
			return err
		}
	}
	return nil
}

// onAttempt is the worker's OnAttempt hook.
func (a *App) onAttempt(d outbox.Delivery, at outbox.Attempt) {
	provider := at.Provider
	if provider == "" {
		provider = "none"
	}
	deliveriesTotal.WithLabelValues(string(d.Channel), provider, string(at.Outcome)).Inc()
	if dur := at.FinishedAt.Sub(at.StartedAt); dur >= 0 {
		deliveryDuration.WithLabelValues(string(d.Channel)).Observe(dur.Seconds())
	}
}

// onDead is the worker's OnDead hook: a counter, a Caddy event. The worker has already
// logged the death with ids and error classes.
func (a *App) onDead(d outbox.Delivery) {
	deadTotal.WithLabelValues(string(d.Channel)).Inc()
	a.emitDeliveryDead(d)
}

// received counts a newly stored submission and announces it.
func (a *App) received(sub *outbox.Submission, stored outbox.AcceptResult) {
	if stored.Duplicate {
		return
	}
	submissionsTotal.WithLabelValues(sub.Form, string(stored.Status)).Inc()
	a.emitSubmissionReceived(sub, stored)
}

var (
	_ prometheus.Collector = (*appMetrics)(nil)
	_ prometheus.Collector = intakeCounters{}
)
